//! What a probe found (DESIGN §6.7): the raw outcome of every probe packet
//! and the findings derived from them, one line each.

use std::fmt;
use std::net::SocketAddrV4;
use std::time::Duration;

/// What became of one probe packet.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    /// Acknowledged, and no leading fragment reached the receiver for it
    /// (it arrived whole).
    Whole,
    /// Acknowledged, and the receiver's KA-Rate echo counted a new leading
    /// fragment whose payload length it gives (`None`: the far end does not
    /// echo, KA was not negotiated).
    Fragmented(Option<u16>),
    /// Not acknowledged after every attempt (or an ICMP "fragmentation
    /// needed" came back for it).
    Lost,
}

/// One sampled leading-fragment length and what arrived.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CodeProbe {
    /// The leading fragment's payload length the prober sent, `L`.
    pub len: u16,
    /// What arrived.
    pub outcome: Outcome,
}

impl CodeProbe {
    /// Whether the receiver saw exactly `L`.
    pub fn preserved(&self) -> bool {
        self.outcome == Outcome::Fragmented(Some(self.len))
    }
}

/// A yes/no finding, or why it could not be tested.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Finding {
    /// Yes.
    Yes,
    /// No.
    No,
    /// Not tested, for the reason given.
    Untested(&'static str),
}

impl Finding {
    fn of(b: bool) -> Finding {
        if b { Finding::Yes } else { Finding::No }
    }

    /// `"yes"`, `"no"` or `"untested"` (the JSON value).
    pub fn as_str(&self) -> &'static str {
        match self {
            Finding::Yes => "yes",
            Finding::No => "no",
            Finding::Untested(_) => "untested",
        }
    }
}

/// Whether a KA router's signal, the leading fragment's payload length,
/// reaches the receiver.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Signal {
    /// Every sampled length arrived as sent.
    Preserved,
    /// Fragments arrive, but at least one sampled length did not: a
    /// middlebox reassembled them (and maybe fragmented again at other
    /// lengths). KA signals cannot cross this path.
    Erased,
    /// Not tested, for the reason given.
    Untested(&'static str),
}

impl Signal {
    /// `"preserved"`, `"erased"` or `"untested"` (the JSON value).
    pub fn as_str(&self) -> &'static str {
        match self {
            Signal::Preserved => "preserved",
            Signal::Erased => "erased",
            Signal::Untested(_) => "untested",
        }
    }
}

/// Everything a probe measured.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Report {
    /// The prober's address and port.
    pub local: SocketAddrV4,
    /// The receiver probed.
    pub remote: SocketAddrV4,
    /// The handshake completed.
    pub connected: bool,
    /// Both ends offered KA-Permitted, so the receiver echoes codes.
    pub ka_negotiated: bool,
    /// The handshake's round-trip time.
    pub rtt: Option<Duration>,
    /// The receiver reset the connection before the probe finished.
    pub reset: bool,
    /// The prober's own link MTU (the largest packet it sends).
    pub local_mtu: u16,
    /// Every DF packet of the path-MTU search: total length, outcome.
    pub df_probes: Vec<(u16, Outcome)>,
    /// The smallest next-hop MTU an ICMP "fragmentation needed" named.
    pub icmp_mtu: Option<u16>,
    /// RTT-indicator-sized DF packets: total length, outcome.
    pub indicators: Vec<(u16, Outcome)>,
    /// Deliberately fragmented packets, one per sampled length.
    pub codes: Vec<CodeProbe>,
    /// The probe ran out of time before its last step.
    pub timed_out: bool,
    /// The connection was closed with FINs both ways.
    pub closed: bool,
    /// Packets the prober sent.
    pub packets_sent: u64,
    /// Time from the first SYN to the end.
    pub elapsed: Duration,
}

impl Report {
    /// The path MTU: the largest DF packet acknowledged whole.
    pub fn path_mtu(&self) -> Option<u16> {
        self.df_probes
            .iter()
            .filter(|(_, o)| *o == Outcome::Whole)
            .map(|&(s, _)| s)
            .max()
    }

    /// Does the path deliver fragmented packets (at least one deliberately
    /// fragmented packet was acknowledged)?
    pub fn fragments_delivered(&self) -> Finding {
        if self.codes.is_empty() {
            return Finding::Untested(self.why_untested());
        }
        Finding::of(self.codes.iter().any(|c| c.outcome != Outcome::Lost))
    }

    /// Does the leading fragment's length survive?
    pub fn signal(&self) -> Signal {
        if !self.ka_negotiated && self.connected {
            return Signal::Untested("the far end did not negotiate KA, so it echoes no lengths");
        }
        let arrived: Vec<&CodeProbe> = self
            .codes
            .iter()
            .filter(|c| c.outcome != Outcome::Lost)
            .collect();
        if arrived.is_empty() {
            return Signal::Untested(if self.codes.is_empty() {
                self.why_untested()
            } else {
                "no fragmented packet arrived"
            });
        }
        // Lengths that were lost (after retries) say nothing about a
        // reassembler; any that arrived at another length, or whole, do.
        if arrived.iter().all(|c| c.preserved()) {
            Signal::Preserved
        } else {
            Signal::Erased
        }
    }

    /// Do RTT indicators (DF, total length 600–611) pass?
    pub fn indicators_pass(&self) -> Finding {
        if self.indicators.is_empty() {
            return Finding::Untested(self.why_untested());
        }
        Finding::of(self.indicators.iter().all(|(_, o)| *o == Outcome::Whole))
    }

    /// Is DF respected: was every DF packet larger than the path MTU
    /// dropped rather than fragmented?
    pub fn df_respected(&self) -> Finding {
        if self
            .df_probes
            .iter()
            .any(|(_, o)| matches!(o, Outcome::Fragmented(_)))
        {
            return Finding::No;
        }
        if !self.ka_negotiated {
            return Finding::Untested("without KA the receiver cannot tell a fragmented packet");
        }
        match self.path_mtu() {
            Some(p) if self.df_probes.iter().any(|&(s, _)| s > p) => Finding::Yes,
            Some(_) => Finding::Untested("the path MTU is the local MTU: no larger DF packet"),
            None => Finding::Untested(self.why_untested()),
        }
    }

    /// Can KA work on this path: fragments arrive with their leading
    /// length intact and RTT indicators pass.
    pub fn ka_usable(&self) -> bool {
        self.fragments_delivered() == Finding::Yes
            && self.signal() == Signal::Preserved
            && self.indicators_pass() == Finding::Yes
    }

    fn why_untested(&self) -> &'static str {
        if !self.connected {
            "no connection"
        } else if self.reset {
            "the receiver reset the connection"
        } else if self.timed_out {
            "time ran out"
        } else {
            "not reached"
        }
    }

    /// The findings, one human-readable line each (what `ka-endpoint
    /// probe` prints).
    pub fn lines(&self) -> Vec<String> {
        let mut out = Vec::new();
        let rtt = self.rtt.map_or("?".to_owned(), |r| {
            format!("{:.1} ms", r.as_secs_f64() * 1e3)
        });
        out.push(format!(
            "probe {} -> {}: {}, rtt {rtt}, {} packets in {:.2} s{}",
            self.local,
            self.remote,
            match (self.connected, self.ka_negotiated) {
                (false, _) => "no connection",
                (true, true) => "KA negotiated",
                (true, false) => "KA NOT negotiated (is the far end a ka-endpoint recv?)",
            },
            self.packets_sent,
            self.elapsed.as_secs_f64(),
            if self.reset {
                " (reset by the receiver)"
            } else if self.timed_out {
                " (time ran out)"
            } else {
                ""
            }
        ));
        let arrived = self
            .codes
            .iter()
            .filter(|c| c.outcome != Outcome::Lost)
            .count();
        out.push(format!(
            "fragmented packets delivered: {}",
            detail(
                self.fragments_delivered(),
                &format!("{arrived} of {} acknowledged", self.codes.len())
            )
        ));
        let exact = self.codes.iter().filter(|c| c.preserved()).count();
        let sig = self.signal();
        out.push(format!(
            "leading-fragment length: {}",
            match sig {
                Signal::Preserved => format!("preserved ({exact} of {} echoed as sent)", self.codes.len()),
                Signal::Erased => format!(
                    "ERASED ({exact} of {} echoed as sent; a middlebox reassembles or re-fragments)",
                    self.codes.len()
                ),
                Signal::Untested(why) => format!("untested ({why})"),
            }
        ));
        if !self.codes.is_empty() {
            let each: Vec<String> = self
                .codes
                .iter()
                .map(|c| format!("{}:{}", c.len, outcome_word(c.outcome, Some(c.len))))
                .collect();
            out.push(format!("codes (L sent: arrived as): {}", each.join(" ")));
        }
        let sizes: Vec<String> = self.indicators.iter().map(|(s, _)| s.to_string()).collect();
        let passed = self
            .indicators
            .iter()
            .filter(|(_, o)| *o == Outcome::Whole)
            .count();
        out.push(format!(
            "RTT indicators (DF, total length {}): {}",
            if sizes.is_empty() {
                "600-611".to_owned()
            } else {
                sizes.join("/")
            },
            detail(
                self.indicators_pass(),
                &format!("{passed} of {} pass", self.indicators.len())
            )
        ));
        out.push(format!(
            "path MTU: {}{}",
            self.path_mtu().map_or(
                "unknown (no DF packet got through)".to_owned(),
                |m| format!(
                    "{m} bytes (largest DF packet acknowledged; local MTU {})",
                    self.local_mtu
                )
            ),
            self.icmp_mtu
                .map_or(String::new(), |m| format!("; ICMP frag-needed said {m}"))
        ));
        let bigger = self.path_mtu().and_then(|p| {
            self.df_probes
                .iter()
                .map(|&(s, _)| s)
                .filter(|&s| s > p)
                .min()
        });
        out.push(format!(
            "DF respected: {}",
            match self.df_respected() {
                Finding::Yes => format!(
                    "yes (a {}-byte DF packet was dropped, not fragmented)",
                    bigger.unwrap_or(0)
                ),
                Finding::No => "NO (a DF packet arrived fragmented)".to_owned(),
                Finding::Untested(why) => format!("untested ({why})"),
            }
        ));
        out.push(format!(
            "verdict: {}",
            if self.ka_usable() {
                "KA signals cross this path"
            } else {
                "KA signals do NOT cross this path; KA endpoints stay in TCP mode here"
            }
        ));
        out
    }
}

fn detail(f: Finding, what: &str) -> String {
    match f {
        Finding::Yes => format!("yes ({what})"),
        Finding::No => format!("NO ({what})"),
        Finding::Untested(why) => format!("untested ({why})"),
    }
}

/// One word for an outcome: `"ok"`, `"whole"`, `"lost"`, the length that
/// arrived instead, or `"fragmented"` when no echo says which.
pub fn outcome_word(o: Outcome, sent: Option<u16>) -> String {
    match o {
        Outcome::Whole => "whole".to_owned(),
        Outcome::Lost => "lost".to_owned(),
        Outcome::Fragmented(Some(l)) if Some(l) == sent => "ok".to_owned(),
        Outcome::Fragmented(Some(l)) => l.to_string(),
        Outcome::Fragmented(None) => "fragmented".to_owned(),
    }
}

impl fmt::Display for Report {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for l in self.lines() {
            writeln!(f, "{l}")?;
        }
        Ok(())
    }
}
