//! `Stack::handle_coalesced` (DESIGN §6.10): a receiver given super-segments
//! — runs of the sender's segments joined as a device's offloads (GRO) join
//! them, with the kernel's partial TCP checksum — delivers the same bytes,
//! counts each run as its segments and acknowledges it at once.

use ka_codec::wire::checksum::checksum;
use ka_endpoint::{Event, Stack, StackConfig, TcpConfig};
use std::net::SocketAddr;
use std::time::{Duration, Instant};

/// IPv4 header length and TCP header length of `p`, and its sequence number.
fn geometry(p: &[u8]) -> (usize, usize, u32) {
    let ihl = usize::from(p[0] & 0x0f) * 4;
    let thl = usize::from(p[ihl + 12] >> 4) * 4;
    let seq = u32::from_be_bytes([p[ihl + 4], p[ihl + 5], p[ihl + 6], p[ihl + 7]]);
    (ihl, thl, seq)
}

/// Joins consecutive data segments as GRO does: the first one's headers,
/// every payload, IP length and header checksum made right, the TCP
/// checksum left wrong (a partial one).
fn coalesce(run: &[Vec<u8>]) -> Vec<u8> {
    let (ihl, _, _) = geometry(&run[0]);
    let mut p = run[0].clone();
    for q in &run[1..] {
        let (ihl, thl, _) = geometry(q);
        p.extend_from_slice(&q[ihl + thl..]);
    }
    let total = u16::try_from(p.len()).expect("fits IPv4");
    p[2..4].copy_from_slice(&total.to_be_bytes());
    p[10..12].copy_from_slice(&[0, 0]);
    let c = checksum(&p[..ihl]);
    p[10..12].copy_from_slice(&c.to_be_bytes());
    p[ihl + 16] ^= 0x5a; // not the segment's checksum any more
    p
}

#[test]
fn coalesced_segments_deliver_the_bytes_and_are_acked_as_a_unit() {
    let tcp = TcpConfig {
        send_buffer: 1 << 20,
        recv_buffer: 1 << 20,
        ..TcpConfig::default()
    };
    let cfg = |s: u8| StackConfig {
        tcp,
        ..StackConfig::deterministic([s; 16])
    };
    let mut now = Instant::now();
    let mut a = Stack::new(cfg(1), now);
    let mut b = Stack::new(cfg(2), now);
    b.listen(5001);
    let local: SocketAddr = "10.0.0.1:40000".parse().expect("address");
    let remote: SocketAddr = "10.0.0.2:5001".parse().expect("address");
    let h = a.connect(now, local, remote).expect("connect");
    let data: Vec<u8> = (0..400_000u32).map(|i| (i * 7 % 251) as u8).collect();
    let mut buf = vec![0u8; 1500];
    let mut read = vec![0u8; 65_536];
    let mut got = Vec::new();
    let (mut written, mut runs, mut acks_for_runs, mut coalesced_segments) = (0, 0, 0, 0u64);
    let mut last_run = None;
    for _ in 0..2_000 {
        now += Duration::from_micros(500);
        a.handle_timeout(now);
        b.handle_timeout(now);
        if let Some(c) = a.conn_mut(h) {
            written += c.write(&data[written..]);
        }
        // A's packets, data segments joined in runs of up to four
        // consecutive ones, everything else as it is.
        let mut out = Vec::new();
        while let Some(n) = a.poll_transmit(now, &mut buf) {
            out.push(buf[..n].to_vec());
        }
        let mut i = 0;
        while i < out.len() {
            let (ihl, thl, seq) = geometry(&out[i]);
            let len = out[i].len() - ihl - thl;
            let mut j = i + 1;
            let mut next = seq.wrapping_add(len as u32);
            while j < out.len() && j < i + 4 && len > 0 {
                let (ihl2, thl2, seq2) = geometry(&out[j]);
                let len2 = out[j].len() - ihl2 - thl2;
                if seq2 != next || len2 != len || thl2 != thl {
                    break;
                }
                next = next.wrapping_add(len2 as u32);
                j += 1;
            }
            if j - i >= 2 {
                let acks_before = b.stats().packets_out;
                let run = coalesce(&out[i..j]);
                b.handle_coalesced(now, &run, (j - i) as u16);
                last_run = Some(run);
                runs += 1;
                coalesced_segments += (j - i) as u64;
                // B's answer to this run alone: one ACK.
                while let Some(n) = b.poll_transmit(now, &mut buf) {
                    a.handle_packet(now, &buf[..n]);
                }
                acks_for_runs += b.stats().packets_out - acks_before;
            } else {
                b.handle_packet(now, &out[i]);
            }
            i = j;
        }
        while let Some((hb, ev)) = b.poll_event() {
            if matches!(ev, Event::Readable) {
                let c = b.conn_mut(hb).expect("live connection");
                loop {
                    let n = c.read(&mut read);
                    if n == 0 {
                        break;
                    }
                    got.extend_from_slice(&read[..n]);
                }
            }
        }
        while let Some(n) = b.poll_transmit(now, &mut buf) {
            a.handle_packet(now, &buf[..n]);
        }
        while a.poll_event().is_some() {}
        if got.len() == data.len() {
            break;
        }
    }
    assert_eq!(got.len(), data.len(), "the transfer completed");
    assert!(got == data, "the receiver got other bytes");
    assert!(runs > 20, "few runs were coalesced: {runs}");
    assert_eq!(b.stats().bad_checksum, 0);
    assert_eq!(
        acks_for_runs, runs,
        "each run of two or more segments is acknowledged at once, once"
    );
    let bh = b.handles().next().expect("B's connection");
    let seen = b
        .conn(bh)
        .expect("B's connection")
        .stats()
        .segments_received;
    assert!(
        seen >= coalesced_segments,
        "a run counts as its segments: {seen} < {coalesced_segments}"
    );
    // The same bytes as a plain packet: its checksum is verified.
    let last = last_run.expect("a run");
    b.handle_packet(now, &last);
    assert_eq!(
        b.stats().bad_checksum,
        1,
        "a plain packet's checksum counts"
    );
}

/// `StackConfig::checksum_offload`: every TCP segment leaves with the
/// pseudo-header's sum in its checksum field (what a device with offloads
/// completes), on every connection whatever its own `TcpConfig`; completed
/// as the kernel completes it, each is the segment a stack without the
/// option sends.
#[test]
fn checksum_offload_leaves_the_pseudo_header_sum_for_the_device() {
    let secret = [3u8; 16];
    let now = Instant::now();
    let plain = StackConfig::deterministic(secret);
    let offload = StackConfig {
        checksum_offload: true,
        ..StackConfig::deterministic(secret)
    };
    let local: SocketAddr = "10.0.0.1:40000".parse().expect("address");
    let remote: SocketAddr = "10.0.0.2:5001".parse().expect("address");
    let mut buf = vec![0u8; 1500];
    let mut sent = Vec::new();
    for cfg in [plain, offload] {
        let mut s = Stack::new(cfg, now);
        // a per-connection TcpConfig does not turn the capability off
        s.connect_with(now, local, remote, TcpConfig::default())
            .expect("connect");
        let n = s.poll_transmit(now, &mut buf).expect("a SYN");
        sent.push(buf[..n].to_vec());
    }
    let (full, mut partial) = (sent[0].clone(), sent[1].clone());
    assert_ne!(full, partial, "the checksum field differs");
    let (ihl, _, _) = geometry(&partial);
    // what the device does: the field is the start of the sum
    let tcp_len = (partial.len() - ihl) as u32;
    let mut pseudo = ka_codec::wire::checksum::pseudo_v4([10, 0, 0, 1], [10, 0, 0, 2], 6, tcp_len);
    while pseudo > 0xffff {
        pseudo = (pseudo & 0xffff) + (pseudo >> 16);
    }
    let field = u16::from_be_bytes([partial[ihl + 16], partial[ihl + 17]]);
    assert_eq!(
        field, pseudo as u16,
        "the field holds the folded pseudo-header sum"
    );
    partial[ihl + 16..ihl + 18].copy_from_slice(&[0, 0]);
    let c = ka_codec::wire::checksum::finish(ka_codec::wire::checksum::sum(
        &partial[ihl..],
        u32::from(field),
    ));
    partial[ihl + 16..ihl + 18].copy_from_slice(&c.to_be_bytes());
    assert_eq!(
        partial, full,
        "completed, it is the segment with its full checksum"
    );
}
