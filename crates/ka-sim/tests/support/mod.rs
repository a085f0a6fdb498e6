//! Scenario TOML for the integration tests, built from the parts they share
//! (a dumbbell, sender groups, workloads) so that each test states only its
//! own numbers. The text is what a user would write in a scenario file, so
//! the tests still go through `Scenario::from_toml`.

// Each test crate that includes this module uses only some of it.
#![allow(dead_code)]

/// A scenario's TOML text, built up table by table.
pub struct ScenarioToml {
    /// Top-level keys (TOML wants them before the first table).
    root: String,
    /// `[topology]`, `[router]`, `[[group]]`, … in the order added.
    tables: String,
}

impl ScenarioToml {
    /// Scenario `name`, simulating `duration_s` seconds.
    pub fn new(name: &str, duration_s: f64) -> Self {
        Self {
            root: format!("name = \"{name}\"\nduration_s = {duration_s:?}\n"),
            tables: String::new(),
        }
    }

    /// A further top-level `key = value` line, e.g. `bin_s = 0.04`.
    pub fn set(mut self, line: &str) -> Self {
        self.root.push_str(line);
        self.root.push('\n');
        self
    }

    /// The topology: a dumbbell of `capacity_mbps` (Mbit/s), `rtt_ms` and
    /// `queue_pkts`, whose forward bottleneck port runs `port` (`ka`, `rcp`
    /// or `droptail`).
    pub fn dumbbell(
        mut self,
        capacity_mbps: f64,
        rtt_ms: f64,
        queue_pkts: usize,
        port: &str,
    ) -> Self {
        self.tables.push_str(&format!(
            "[topology]\nkind = \"dumbbell\"\ncapacity_mbps = {capacity_mbps:?}\n\
             rtt_ms = {rtt_ms:?}\nqueue_pkts = {queue_pkts}\nport = \"{port}\"\n"
        ));
        self
    }

    /// The `[router]` table: `keys`, one `key = value` a line.
    pub fn router(mut self, keys: &str) -> Self {
        self.tables.push_str(&format!("[router]\n{keys}\n"));
        self
    }

    /// A `[[group]]` of `count` senders of `kind` named `name`, the first
    /// `track` of them tracked (0: none), each running `workload` (the keys
    /// of `[group.workload]`, see [`long_lived`] and [`on_off`]).
    pub fn group(
        mut self,
        name: &str,
        kind: &str,
        count: usize,
        track: usize,
        workload: &str,
    ) -> Self {
        self.tables.push_str(&format!(
            "[[group]]\nname = \"{name}\"\nkind = \"{kind}\"\ncount = {count}\n"
        ));
        if track > 0 {
            self.tables.push_str(&format!("track = {track}\n"));
        }
        self.tables
            .push_str(&format!("[group.workload]\n{workload}\n"));
        self
    }

    /// The TOML text.
    pub fn text(&self) -> String {
        format!("{}{}", self.root, self.tables)
    }
}

/// `[group.workload]` keys of long-lived flows, plus `extra` keys (one
/// `key = value` a line, or empty).
pub fn long_lived(extra: &str) -> String {
    format!("type = \"long-lived\"\n{extra}")
}

/// `[group.workload]` keys of on-off senders: off times of mean
/// `off_mean_s`, flow sizes bounded Pareto over `[min_pkts, max_pkts]`
/// packets with `shape` and mean `mean_pkts`.
pub fn on_off(
    off_mean_s: f64,
    [min_pkts, max_pkts]: [f64; 2],
    shape: f64,
    mean_pkts: f64,
) -> String {
    format!(
        "type = \"on-off\"\noff_mean_s = {off_mean_s:?}\nsizes = {{ min_pkts = {min_pkts:?}, \
         max_pkts = {max_pkts:?}, shape = {shape:?}, mean_pkts = {mean_pkts:?} }}"
    )
}

/// A 12 s scenario of on-off `tcp-newreno` flows of exactly `packets` full
/// packets (sizes in [n, n + 0.4] round to n), one sender alone on the
/// paper's dumbbell (150 Mbit/s, RTT 100 ms, 1000-packet drop-tail).
pub fn lone_tcp_flows_toml(packets: u32) -> String {
    let n = f64::from(packets);
    ScenarioToml::new("lone", 12.0)
        .dumbbell(150.0, 100.0, 1000, "droptail")
        .group(
            "tcp",
            "tcp-newreno",
            1,
            0,
            &on_off(0.5, [n, n + 0.4], 1.8, n + 0.1),
        )
        .text()
}
