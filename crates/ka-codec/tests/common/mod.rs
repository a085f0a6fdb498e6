//! TCP option strategies shared by the codec's property tests.

use ka_codec::options::{KaRate, RcpEcho, XcpEcho};
use ka_codec::wire::tcp::{SackBlocks, TcpOptions};
use proptest::prelude::*;

/// Every TCP option ka emits, in the combinations an endpoint emits them.
pub fn arb_options() -> impl Strategy<Value = TcpOptions> {
    (
        proptest::option::of(any::<u16>()),
        proptest::option::of(0u8..=14),
        any::<bool>(),
        proptest::collection::vec((any::<u32>(), any::<u32>()), 0..=4),
        proptest::option::of((any::<u32>(), any::<u32>())),
        any::<bool>(),
        proptest::option::of((3u8..=185, any::<u8>())),
        (any::<bool>(), proptest::option::of(any::<u32>())),
        (any::<bool>(), proptest::option::of(any::<i32>())),
    )
        .prop_map(|(mss, ws, sp, sack, ts, kp, kr, (rp, re), (xp, xe))| {
            let mut blocks = SackBlocks::new();
            for (l, r) in sack {
                blocks.push(l, r);
            }
            TcpOptions {
                mss,
                window_scale: ws,
                sack_permitted: sp,
                sack: blocks,
                timestamps: ts,
                ka_permitted: kp,
                ka_rate: kr.map(|(code, count)| KaRate { code, count }),
                // A segment is KA or native RCP, never both (the parser
                // drops RCP options next to KA ones).
                rcp_permitted: rp && !kp && kr.is_none(),
                rcp_echo: re
                    .filter(|_| !kp && kr.is_none())
                    .map(|rate_bytes_per_sec| RcpEcho { rate_bytes_per_sec }),
                // ... and XCP options only without KA and RCP ones.
                xcp_permitted: xp && !kp && kr.is_none() && !rp && re.is_none(),
                xcp_echo: xe
                    .filter(|_| !kp && kr.is_none() && !rp && re.is_none())
                    .map(|feedback_bytes| XcpEcho { feedback_bytes }),
            }
        })
}
