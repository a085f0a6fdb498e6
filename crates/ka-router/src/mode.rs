//! The router's TCP-mode detector (DESIGN §3.6, paper §II-C2).
//!
//! Traffic that ignores the advertised rate shows up as a standing queue. When
//! the queue *reaches* the threshold (default 50 % of the queue limit, in
//! packets) the port enters TCP mode: it stops stamping and freezes R. It
//! leaves TCP mode once the queue has stayed *below* the threshold for the
//! hold time (default one average RTT d), so a queue oscillating around the
//! threshold does not make the port flap.
//!
//! The detector is evaluated after every enqueue attempt and every dequeue;
//! the hold expiry is an event of its own that the port processes at exactly
//! `below_since + hold` (with the d current at that point).
//!
//! # Deviation from DESIGN §3.6: only foreign traffic makes TCP mode
//!
//! The paper's premise is that a standing queue means traffic that ignores
//! the signals. KA flows that are themselves in TCP mode (after a loss or a
//! silence) and KA flows overshooting after a flash crowd of joins also
//! make a standing queue — and KA flows in TCP mode then *keep* the queue
//! above the threshold, so a port without any legacy traffic can lock itself
//! and its flows in TCP mode for good (paper Fig. 5's first epoch, Fig. 7's
//! KA router). The port can tell the two apart: a KA endpoint never sets DF
//! on its data (it must stay fragmentable), while legacy TCP stacks set DF
//! on every packet (path-MTU discovery). So the detector also tracks the
//! share of *foreign* bytes among arrivals — IPv4 with DF that is not an RTT
//! indicator, non-IP, and IPv6 when the port does not signal IPv6 —
//! averaged over about one d (an exponential average with time constant d,
//! updated every control interval):
//!
//! * TCP mode starts only if the queue reaches the threshold **and** the
//!   foreign share is at least `foreign_frac` (default 10 %): a queue of KA
//!   traffic alone is RCP's to drain (its β·q/d term), not a reason to stop
//!   signalling.
//! * TCP mode also ends once the foreign share has fallen below
//!   `foreign_frac / 2`, whatever the queue (the legacy traffic has left;
//!   what is queued is KA flows in TCP mode, which come back on the next
//!   signal).
//!
//! **R frozen at its calm value.** On entering TCP mode the port freezes R
//! (DESIGN §3.5) — but at the value R had at the last control interval
//! that ended with a short queue (a tenth of the threshold), not at the
//! moment of entry: RCP reacts to the foreign traffic's load (y > C, then
//! the growing queue) well before the queue reaches the threshold and by
//! then has cut R several-fold (Fig. 5: from 2.34 to about 0.6 Mbit/s),
//! so the KA flows would resume far below their old fair share, which is
//! what the freeze is for ("KA flows resume at the old fair share").
//!
//! `foreign_frac = 0` gives the paper's rule exactly (the calm-value freeze
//! and the fair-share floor below are then off too).
//!
//! # Foreign by behaviour, and the fair-share floor (DESIGN §3.6.1)
//!
//! DF alone misses legacy traffic that does not set it, and a queue
//! threshold misses legacy traffic that keeps the queue short (BBR): in
//! both cases RCP sees `y > C` and lowers R, the legacy flow takes what the
//! KA flows give up, and the port never hands over to TCP mode. Measured
//! on a 20 Mbit/s, 20 ms testbed before this rule: a KA flow got 5.9
//! Mbit/s against BBR's 18.6, 4.7 against CUBIC's 18.9. So the bytes the
//! detector counts as foreign are judged per flow by the
//! [`judge`](crate::judge) module: DF (kept as a hint), a flow sending more
//! than 1.5 times the signalled R over half a d, or a flow sending without
//! RTT indicators for longer than KA endpoints ever do.
//!
//! While the foreign share is at least `foreign_frac` (and until it falls
//! below half of it), R is kept at least at `C / n`, n the flows active in
//! the last window (`fair_share`). What each side gets, one KA flow
//! against one legacy flow:
//!
//! * **BBR** keeps the queue short, so TCP mode never starts. Without the
//!   floor RCP cuts R whenever BBR probes (y > C), and BBR's max-filtered
//!   bandwidth estimate grows into what R gave up — a ratchet down to
//!   R_min. With the floor the KA flow paces at C/2; BBR's delivery rate
//!   is then C/2, its estimate settles there, and its 1.25 probes only
//!   make a queue that drains. Simulated (ka-sim, 20 Mbit/s, 20 ms,
//!   1000-packet queue): KA 9.3, BBR 9.7 Mbit/s (before: 0.17 and 18.4).
//! * **CUBIC / Reno** fill the queue: the floor holds the KA flow at C/2
//!   until the queue reaches the threshold, then TCP mode freezes R at its
//!   calm value and the KA flow competes as NewReno from the window it had
//!   at C/2, not from the R_min RCP would have left it (before: KA 0.26
//!   against CUBIC's 19.0 with a 1000-packet queue; now 4.5 against 14.7,
//!   what a second CUBIC flow gets against a first one, 5.0 against 14.4;
//!   with a 100-packet queue 11.7 against 7.6). The table in DESIGN
//!   §3.6.1 has the other cases.
//! * **The legacy flow** never gets less than its TCP-fair share from the
//!   floor: KA flows are held at `C / n` each, no more, so the legacy
//!   flows keep `n_legacy · C / n`; RCP may raise R above the floor only
//!   when the link has room (y < C).
//!
//! **No flapping.** The floor switches on at `foreign_frac` and off below
//! half of it, over an average of time constant d, and a flow's verdict
//! outlasts its last reason by about one d; while it holds the floor only
//! bounds R from below, so R does not jump when it ends (RCP continues from
//! where it is). TCP mode keeps its own threshold and hold.
//!
//! # Contention mode (DESIGN §3.6.3)
//!
//! The floor gives the KA flows their TCP-fair share, which in a deep
//! buffer is not what a TCP flow in their place gets (more against BBR,
//! less against an incumbent CUBIC flow). With `contend_rtts > 0` (the
//! default, 8) the port makes them TCP flows while legacy traffic stays:
//! a floor that has held R up for `contend_rtts` d without a break starts
//! TCP mode as a full queue does, and TCP mode started that way does not
//! end by the hold time while the floor holds (only when the foreign share
//! has fallen below half of `foreign_frac`). KA endpoints in their TCP mode are never foreign
//! (no rate test in TCP mode, indicators, no DF), so a port without legacy
//! traffic always finds its way back.

/// Whether the port is signalling.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum Mode {
    /// Kick-Ass mode: rates are signalled (stamped) and R is updated.
    #[default]
    Ka,
    /// TCP mode: no stamping, R frozen.
    Tcp,
}

/// Threshold + hold state machine. Times are nanoseconds on the port's clock.
#[derive(Debug, Clone)]
pub(crate) struct ModeDetector {
    threshold: usize,
    hold: Option<u64>,
    mode: Mode,
    /// In TCP mode: when the queue last went below the threshold (None while
    /// it is at or above it).
    below_since: Option<u64>,
    changes: u64,
    /// Minimum foreign share for TCP mode (0 = the paper's queue-only rule).
    foreign_frac: f64,
    /// Exponentially averaged foreign and total bytes (time constant d) up
    /// to the last control interval, and the bytes of the current one.
    foreign_avg: f64,
    total_avg: f64,
    foreign_cur: u64,
    total_cur: u64,
    /// [`ModeConfig::fair_share`].
    fair_share: bool,
    /// The fair-share floor holds (foreign share reached `foreign_frac`
    /// and has not yet fallen below half of it).
    floor: bool,
    /// [`ModeConfig::contend_rtts`] (0 = off).
    contend_rtts: f64,
    /// Since when (port clock, ns) the floor has held R up without a break.
    floor_bound_since: Option<u64>,
    /// TCP mode was started by the floor (contention), not by the queue.
    contended: bool,
}

impl ModeDetector {
    pub(crate) fn new(config: &ModeConfig, queue_limit: usize) -> Self {
        // `as usize` saturates for huge/inf values; NaN → 0 → clamped to 1.
        let threshold = (config.threshold_frac * queue_limit as f64).ceil() as usize;
        Self {
            threshold: threshold.max(1),
            hold: config.hold.map(crate::time::duration_ns),
            mode: Mode::Ka,
            below_since: None,
            changes: 0,
            foreign_frac: if config.foreign_frac.is_finite() {
                config.foreign_frac.clamp(0.0, 1.0)
            } else {
                0.0
            },
            foreign_avg: 0.0,
            total_avg: 0.0,
            foreign_cur: 0,
            total_cur: 0,
            fair_share: config.fair_share,
            floor: false,
            contend_rtts: if config.contend_rtts.is_finite() {
                config.contend_rtts.max(0.0)
            } else {
                0.0
            },
            floor_bound_since: None,
            contended: false,
        }
    }

    /// Whether contention mode is on: TCP mode ends only when the foreign
    /// traffic has gone, and a floor that holds R up for `contend_rtts` d
    /// starts it (see the module docs).
    fn contends(&self) -> bool {
        self.contend_rtts > 0.0 && self.fair_share && self.foreign_frac > 0.0
    }

    /// The control interval ending at `t` ended with the fair-share floor
    /// holding R up (`bound`: RCP alone would have gone below `C / n`) or
    /// not; `rtt_ns` is d. With contention on, a floor that has held R up
    /// for `contend_rtts` d without a break starts TCP mode: the legacy
    /// traffic takes whatever the KA flows leave (BBR), so they compete as
    /// TCP instead. Returns whether TCP mode started.
    pub(crate) fn on_floor(&mut self, t: u64, bound: bool, rtt_ns: u64) -> bool {
        if !bound || !self.contends() {
            self.floor_bound_since = None;
            return false;
        }
        let since = *self.floor_bound_since.get_or_insert(t);
        // `as` saturates: any d gives a u64.
        let need = (self.contend_rtts * rtt_ns.max(1) as f64) as u64;
        if self.mode == Mode::Ka && t.saturating_sub(since) >= need {
            self.mode = Mode::Tcp;
            self.below_since = None;
            self.floor_bound_since = None;
            self.contended = true;
            self.changes += 1;
            return true;
        }
        false
    }

    /// A packet of `bytes` arrived; `foreign` if it cannot come from a KA
    /// endpoint (see the module docs).
    pub(crate) fn on_arrival(&mut self, bytes: usize, foreign: bool) {
        self.total_cur = self.total_cur.saturating_add(bytes as u64);
        if foreign {
            self.foreign_cur = self.foreign_cur.saturating_add(bytes as u64);
        }
    }

    /// The foreign share of recent arrivals (0 when nothing arrived).
    pub(crate) fn foreign_share(&self) -> f64 {
        let total = self.total_avg + self.total_cur as f64;
        if total > 0.0 {
            (self.foreign_avg + self.foreign_cur as f64) / total
        } else {
            0.0
        }
    }

    /// A control interval of `interval_ns` ended (followed by `idle_ns`
    /// without arrivals); `rtt_ns` is d. Folds the interval into the
    /// averages, and ends TCP mode if the foreign traffic has gone.
    pub(crate) fn on_interval(&mut self, interval_ns: u64, idle_ns: u64, rtt_ns: u64) {
        let d = rtt_ns.max(1) as f64;
        let decay = (-(interval_ns as f64) / d).exp();
        self.foreign_avg = self.foreign_avg * decay + self.foreign_cur as f64;
        self.total_avg = self.total_avg * decay + self.total_cur as f64;
        self.foreign_cur = 0;
        self.total_cur = 0;
        if idle_ns > 0 {
            let idle = (-(idle_ns as f64) / d).exp();
            self.foreign_avg *= idle;
            self.total_avg *= idle;
        }
        let share = self.foreign_share();
        if self.fair_share && self.foreign_frac > 0.0 {
            if share >= self.foreign_frac {
                self.floor = true;
            } else if share < self.foreign_frac / 2.0 {
                self.floor = false;
            }
        }
        if self.mode == Mode::Tcp && self.foreign_frac > 0.0 && share < self.foreign_frac / 2.0 {
            self.mode = Mode::Ka;
            self.contended = false;
            self.below_since = None;
            self.changes += 1;
        }
    }

    /// Whether the fair-share floor holds (see the module docs): foreign
    /// traffic has reached `foreign_frac` of the arrivals and not yet
    /// fallen below half of it. Never with `foreign_frac = 0` or
    /// `fair_share = false`.
    pub(crate) fn floor(&self) -> bool {
        self.floor
    }

    /// Whether the foreign share allows TCP mode.
    fn foreign_enough(&self) -> bool {
        self.foreign_frac <= 0.0 || self.foreign_share() >= self.foreign_frac
    }

    pub(crate) fn mode(&self) -> Mode {
        self.mode
    }

    pub(crate) fn changes(&self) -> u64 {
        self.changes
    }

    /// The threshold in packets.
    pub(crate) fn threshold(&self) -> usize {
        self.threshold
    }

    /// The queue now holds `len` packets (after an enqueue attempt or a
    /// dequeue at time `t`).
    pub(crate) fn on_queue(&mut self, t: u64, len: usize) {
        if len >= self.threshold {
            if self.mode == Mode::Ka {
                if !self.foreign_enough() {
                    return;
                }
                self.mode = Mode::Tcp;
                self.changes += 1;
            }
            self.below_since = None;
        } else if self.mode == Mode::Tcp && self.below_since.is_none() {
            self.below_since = Some(t);
        }
    }

    /// When TCP mode ends if nothing changes, given the current d (ns).
    /// With contention on, never while the foreign traffic is there (the
    /// floor holds): then only [`Self::on_interval`] ends it.
    pub(crate) fn expiry(&self, rtt_ns: u64) -> Option<u64> {
        if self.mode != Mode::Tcp || (self.contended && self.floor) {
            return None;
        }
        let hold = self.hold.unwrap_or(rtt_ns);
        self.below_since.map(|s| s.saturating_add(hold))
    }

    /// The hold expired: back to KA mode.
    pub(crate) fn expire(&mut self) {
        if self.mode == Mode::Tcp {
            self.mode = Mode::Ka;
            self.contended = false;
            self.below_since = None;
            self.changes += 1;
        }
    }
}

/// Knobs of the router's TCP-mode detector (DESIGN §3.6).
#[derive(Debug, Clone, Copy, PartialEq)]
#[cfg_attr(
    feature = "serde",
    derive(serde::Serialize, serde::Deserialize),
    serde(default, deny_unknown_fields)
)]
pub struct ModeConfig {
    /// Enter TCP mode when the queue holds at least
    /// `ceil(threshold_frac · queue_limit)` packets (at least 1). Default 0.5.
    pub threshold_frac: f64,
    /// How long the queue must stay below the threshold before the port
    /// leaves TCP mode. `None` (default) = one average RTT d, read when the
    /// hold is evaluated.
    #[cfg_attr(
        feature = "serde",
        serde(
            with = "crate::serde_units::opt_duration",
            skip_serializing_if = "Option::is_none"
        )
    )]
    pub hold: Option<std::time::Duration>,
    /// TCP mode needs at least this share of *foreign* bytes (DF set and
    /// not an RTT indicator, i.e. not from a KA endpoint) among the
    /// arrivals of about the last d, and ends when the share falls below
    /// half of it. Default 0.1; 0 = the paper's queue-only rule. See the
    /// `mode` module docs (a deviation from DESIGN §3.6).
    pub foreign_frac: f64,
    /// Count IPv4 packets with DF (not RTT indicators) as foreign, as a
    /// hint besides behaviour. Default true; false judges by behaviour
    /// alone (e.g. to test legacy traffic that does not set DF).
    pub df_hint: bool,
    /// Judge flows by behaviour (DESIGN §3.6.1): a flow sending well above
    /// the signalled rate, or sending without RTT indicators, is foreign.
    /// Default true; false = the DF hint alone.
    pub behaviour: bool,
    /// While foreign traffic holds at least `foreign_frac` of the arrivals,
    /// R is kept at least `C / n` (n = active flows): the KA flows' TCP-fair
    /// share (DESIGN §3.6.1). Default true.
    pub fair_share: bool,
    /// Contention mode (DESIGN §3.6.3), in units of d; 0 = off. While
    /// foreign traffic holds (the floor's hysteresis), TCP mode does not
    /// end when the queue has been short for the hold time, only when the
    /// foreign traffic has gone; and a fair-share floor that has held R up
    /// for this many d without a break starts TCP mode. Needs `fair_share`
    /// and `foreign_frac > 0`. Default 8.
    pub contend_rtts: f64,
}

impl Default for ModeConfig {
    fn default() -> Self {
        Self {
            threshold_frac: 0.5,
            hold: None,
            foreign_frac: 0.1,
            df_hint: true,
            behaviour: true,
            fair_share: true,
            contend_rtts: 8.0,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    const D: u64 = 100_000_000; // 100 ms

    /// The paper's queue-only rule (no foreign-traffic gate).
    fn paper() -> ModeConfig {
        ModeConfig {
            foreign_frac: 0.0,
            ..ModeConfig::default()
        }
    }

    #[test]
    fn queue_of_ka_traffic_alone_is_no_tcp_mode() {
        let mut d = ModeDetector::new(&ModeConfig::default(), 1000);
        for _ in 0..100 {
            d.on_arrival(1500, false);
        }
        d.on_queue(0, 900);
        assert_eq!(d.mode(), Mode::Ka, "only KA (non-DF) traffic");
        // 20 % foreign bytes: TCP mode at the threshold.
        for _ in 0..25 {
            d.on_arrival(1500, true);
        }
        assert!((d.foreign_share() - 0.2).abs() < 1e-9);
        d.on_queue(1, 900);
        assert_eq!(d.mode(), Mode::Tcp);
        // The foreign traffic stops: the average decays with time constant
        // d; below half the threshold share TCP mode ends, queue or not.
        let mut t = 0;
        let mut left_at = None;
        for i in 0..100 {
            t += D / 10;
            for _ in 0..12 {
                d.on_arrival(1500, false);
            }
            d.on_interval(D / 10, 0, D);
            d.on_queue(t, 900);
            if d.mode() == Mode::Ka {
                left_at = Some(i);
                break;
            }
        }
        // from 20 % to below 5 %: about ln(4)·d plus the dilution by KA bytes
        let i = left_at.expect("TCP mode ends without foreign traffic");
        assert!((3..=14).contains(&i), "after {i} intervals");
        assert_eq!(d.changes(), 2);
        // and a full queue of KA traffic does not bring it back
        d.on_queue(t + 1, 1000);
        assert_eq!(d.mode(), Mode::Ka);
    }

    #[test]
    fn idle_time_decays_the_average() {
        let mut d = ModeDetector::new(&ModeConfig::default(), 1000);
        d.on_arrival(1000, true);
        d.on_interval(D / 10, 0, D);
        assert!((d.foreign_share() - 1.0).abs() < 1e-9);
        d.on_interval(D / 10, 10 * D, D);
        d.on_arrival(1000, false);
        assert!(d.foreign_share() < 0.001, "{}", d.foreign_share());
    }

    #[test]
    fn threshold_is_half_rounded_up() {
        let d = ModeDetector::new(&ModeConfig::default(), 1000);
        assert_eq!(d.threshold(), 500);
        let d = ModeDetector::new(&ModeConfig::default(), 7);
        assert_eq!(d.threshold(), 4);
        let d = ModeDetector::new(&ModeConfig::default(), 0);
        assert_eq!(d.threshold(), 1);
    }

    #[test]
    fn enters_at_threshold_not_before() {
        let mut d = ModeDetector::new(&paper(), 1000);
        d.on_queue(0, 499);
        assert_eq!(d.mode(), Mode::Ka);
        d.on_queue(1, 500);
        assert_eq!(d.mode(), Mode::Tcp);
        assert_eq!(d.changes(), 1);
    }

    #[test]
    fn oscillation_keeps_tcp_mode_and_hold_restarts() {
        let mut d = ModeDetector::new(&paper(), 1000);
        d.on_queue(0, 500);
        // Dips below and back above, each dip shorter than the hold.
        let mut t = 0;
        for _ in 0..50 {
            t += D / 2;
            d.on_queue(t, 499);
            assert_eq!(d.expiry(D), Some(t + D));
            t += D / 2 - 1;
            d.on_queue(t, 501);
            assert_eq!(d.expiry(D), None);
            assert_eq!(d.mode(), Mode::Tcp);
        }
        assert_eq!(d.changes(), 1);
        // Below from t on: expires exactly one d later.
        d.on_queue(t, 10);
        d.on_queue(t + 5, 3); // further dequeues keep the original start
        assert_eq!(d.expiry(D), Some(t + D));
        d.expire();
        assert_eq!(d.mode(), Mode::Ka);
        assert_eq!(d.changes(), 2);
        assert_eq!(d.expiry(D), None);
    }

    /// Arrivals of one control interval of d/10 with `foreign` of every
    /// 10 packets foreign, the interval's end, then the queue at `len`.
    fn interval(d: &mut ModeDetector, t: &mut u64, foreign: usize, len: usize) {
        *t += D / 10;
        for i in 0..10 {
            d.on_arrival(1500, i < foreign);
        }
        d.on_interval(D / 10, 0, D);
        d.on_queue(*t, len);
    }

    #[test]
    fn contention_keeps_tcp_mode_until_the_foreign_traffic_leaves() {
        let mut d = ModeDetector::new(&ModeConfig::default(), 1000);
        let mut t = 0;
        // 30 % foreign bytes: the floor holds.
        for _ in 0..20 {
            interval(&mut d, &mut t, 3, 100);
        }
        assert!(d.floor());
        // A queue that reaches the threshold starts TCP mode, which the
        // hold ends as before once the queue is short again.
        interval(&mut d, &mut t, 3, 600);
        assert_eq!(d.mode(), Mode::Tcp);
        interval(&mut d, &mut t, 3, 10);
        assert_eq!(d.expiry(D), Some(t + D));
        d.expire();
        assert_eq!(d.mode(), Mode::Ka);
        // The floor holds R up for 8 d: TCP mode, and no hold expiry
        // while the foreign traffic is still there, however long the
        // queue stays short.
        let from = t;
        while !d.on_floor(t, true, D) {
            t += D / 10;
            assert!(t - from <= 8 * D, "the floor held 8 d");
        }
        assert_eq!(d.mode(), Mode::Tcp);
        for _ in 0..100 {
            interval(&mut d, &mut t, 3, 10);
            assert_eq!(d.expiry(D), None);
            assert_eq!(d.mode(), Mode::Tcp);
        }
        // It leaves: TCP mode ends once its share is below half of
        // foreign_frac.
        let mut left = None;
        for i in 0..100 {
            interval(&mut d, &mut t, 0, 10);
            if d.mode() == Mode::Ka {
                left = Some(i);
                break;
            }
        }
        let i = left.expect("TCP mode ends when the foreign traffic has gone");
        assert!((5..=30).contains(&i), "after {i} intervals");
        assert_eq!(d.changes(), 4);
    }

    #[test]
    fn a_floor_that_holds_r_up_for_contend_rtts_starts_tcp_mode() {
        let mut d = ModeDetector::new(&ModeConfig::default(), 1000);
        // Bound for 7.9 d, a break, then bound again from 10 d on.
        for i in 0..=79 {
            assert!(!d.on_floor(i * D / 10, true, D));
        }
        assert!(!d.on_floor(80 * D / 10, false, D));
        for i in 100..180 {
            assert!(!d.on_floor(i * D / 10, true, D), "at {i}");
            assert_eq!(d.mode(), Mode::Ka);
        }
        assert!(d.on_floor(180 * D / 10, true, D), "8 d after the break");
        assert_eq!(d.mode(), Mode::Tcp);
        assert_eq!(d.changes(), 1);
    }

    #[test]
    fn without_contention_the_floor_changes_no_mode_and_the_hold_ends_tcp_mode() {
        for cfg in [
            ModeConfig {
                contend_rtts: 0.0,
                ..ModeConfig::default()
            },
            ModeConfig {
                fair_share: false,
                ..ModeConfig::default()
            },
        ] {
            let mut d = ModeDetector::new(&cfg, 1000);
            for i in 0..1000 {
                assert!(!d.on_floor(i * D / 10, true, D));
            }
            let mut t = 0;
            for _ in 0..20 {
                interval(&mut d, &mut t, 3, 100);
            }
            interval(&mut d, &mut t, 3, 600);
            assert_eq!(d.mode(), Mode::Tcp);
            interval(&mut d, &mut t, 3, 10);
            assert_eq!(d.expiry(D), Some(t + D), "{cfg:?}");
        }
    }

    #[test]
    fn configured_hold_overrides_rtt() {
        let cfg = ModeConfig {
            threshold_frac: 0.25,
            hold: Some(Duration::from_millis(7)),
            foreign_frac: 0.0,
            ..ModeConfig::default()
        };
        let mut d = ModeDetector::new(&cfg, 100);
        assert_eq!(d.threshold(), 25);
        d.on_queue(0, 30);
        d.on_queue(1_000, 0);
        assert_eq!(d.expiry(D), Some(1_000 + 7_000_000));
    }
}
