//! The narrow interface between a transport and a congestion controller.
//!
//! One [`Controller`] serves one *connection*: a single-path TCP flow (one subflow) or an MPTCP
//! connection (K subflows). Coupled algorithms need to read the state of every sibling subflow, so
//! the controller is handed the whole slice of [`Subflow`] views on every call and may write only
//! the `cwnd` and `ssthresh` of the subflow the event belongs to (plus its own private state).
//!
//! The transport owns the slice. Before each call it refreshes the measured fields (`srtt`,
//! `min_rtt`, `in_flight`, `in_recovery`, counters) of the subflow concerned; the controller never
//! sees a clock other than the `now` passed in, does no I/O and allocates nothing after
//! construction.
//!
//! Units: windows are in segments (MSS-sized packets) as `f64`, following the papers, which
//! state every rule per packet. Times are integer nanoseconds ([`Nanos`]).

/// Integer nanoseconds: the only time unit that crosses this interface.
pub type Nanos = u64;

/// Nanoseconds per second, for conversions at the edge.
pub const NANOS_PER_SEC: f64 = 1e9;

/// The smallest congestion window any algorithm may leave behind (segments).
///
/// Linux never lets `snd_cwnd` fall below 1.
pub const MIN_CWND: f64 = 1.0;

/// Linux's floor for `ssthresh` after a loss (`max(cwnd/2, 2)` in `tcp_reno_ssthresh`).
pub const MIN_SSTHRESH: f64 = 2.0;

/// What the transport knows about one subflow, and the window the controller sets for it.
#[derive(Clone, Debug, PartialEq)]
pub struct Subflow {
    /// Congestion window in segments. Written by the controller.
    pub cwnd: f64,
    /// Slow-start threshold in segments. Written by the controller.
    pub ssthresh: f64,
    /// Smoothed RTT (RFC 6298), ns; 0 until the first sample.
    pub srtt: Nanos,
    /// Smallest RTT sample seen, ns; 0 until the first sample.
    pub min_rtt: Nanos,
    /// Latest RTT sample, ns; 0 until the first sample.
    pub latest_rtt: Nanos,
    /// Segments sent and not yet acknowledged or marked lost (RFC 6675 `pipe`).
    pub in_flight: u32,
    /// Maximum segment size in bytes.
    pub mss: u32,
    /// True between a loss event (fast retransmit) and the end of that recovery episode.
    pub in_recovery: bool,
    /// False for a subflow that has not started or has been closed: coupled sums skip it.
    pub active: bool,
    /// Segments cumulatively delivered (acknowledged) on this subflow.
    pub delivered: u64,
    /// Segments this subflow has declared lost (each counted once).
    pub lost: u64,
    /// Loss events (window reductions) on this subflow: fast-recovery entries plus RTOs.
    pub loss_events: u64,
}

impl Subflow {
    /// A fresh subflow: Linux's initial window of 10 segments and an "infinite" ssthresh.
    pub fn new(mss: u32) -> Self {
        Subflow {
            cwnd: 10.0,
            ssthresh: f64::INFINITY,
            srtt: 0,
            min_rtt: 0,
            latest_rtt: 0,
            in_flight: 0,
            mss,
            in_recovery: false,
            active: true,
            delivered: 0,
            lost: 0,
            loss_events: 0,
        }
    }

    /// True while `cwnd < ssthresh` (Linux `tcp_in_slow_start`).
    pub fn in_slow_start(&self) -> bool {
        self.cwnd < self.ssthresh
    }

    /// Smoothed RTT in seconds, or `None` before the first sample.
    pub fn srtt_secs(&self) -> Option<f64> {
        (self.srtt > 0).then(|| self.srtt as f64 / NANOS_PER_SEC)
    }
}

/// One acknowledgement that advanced the cumulative ACK point (or SACKed new data) on a subflow.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Ack {
    /// Bytes newly acknowledged (cumulatively or selectively) by this ACK.
    pub acked_bytes: u64,
    /// RTT sample carried by this ACK (Karn's rule applied by the transport), if any.
    pub rtt_sample: Option<Nanos>,
    /// One-way delay source to sink of the newest segment this ACK covers, if the transport can
    /// measure it (the simulator always can; the kernel can with a shared clock).
    pub one_way_delay: Option<Nanos>,
    /// Current time.
    pub now: Nanos,
}

impl Ack {
    /// Newly acknowledged data in whole-or-partial segments (at least 1 for a non-empty ACK).
    pub fn acked_segments(&self, mss: u32) -> u32 {
        let mss = u64::from(mss.max(1));
        (self.acked_bytes.div_ceil(mss)).min(u64::from(u32::MAX)) as u32
    }
}

/// How congestion avoidance credits an ACK: by the data it acknowledges or once per ACK.
///
/// - `Bytes` (default): an ACK that newly acknowledges `n` segments (`acked_bytes / mss`,
///   a partial segment counting as one, as Linux counts packets) makes `n` per-segment
///   increments, all computed from the window before the ACK: `w += n * inc(w)`. This is
///   RFC 6356 Section 3 (the increase is per *bytes acknowledged*) and Linux 6.18
///   `tcp_cong_avoid_ai(tp, w, acked)` (net/ipv4/tcp_cong.c), which adds `acked` to
///   `snd_cwnd_cnt` and moves `snd_cwnd_cnt / w` whole segments into `snd_cwnd` against the
///   same `w`: a stretch ACK is credited in full, and the fractional remainder carries to the
///   next ACK (here it stays in the real-valued window). Segments left over when slow start
///   reaches `ssthresh` go on into congestion avoidance, as `tcp_reno_cong_avoid` and
///   `cubictcp_cong_avoid` pass the return value of `tcp_slow_start` on.
/// - `Acks`: one increment step per ACK whatever it acknowledges, and a slow-start ACK does
///   nothing else (the leftover is dropped): the out-of-tree Linux MPTCP v0.95 coupled
///   algorithms (`mptcp_ccc_cong_avoid`: `snd_cwnd_cnt++` per call; `tcp_slow_start();
///   return;`), which the kernels of the reproduced papers ran (MPTCP v0.88 in Peng et al.
///   2016, v0.93 in Pokhrel & Williamson 2020). With delayed ACKs (one ACK per two
///   segments) it grows about half as fast per RTT as `Bytes`.
///
/// Slow start counts acknowledged segments in both modes (Linux `tcp_slow_start(tp, acked)`,
/// also in v0.95).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum Counting {
    #[default]
    Bytes,
    Acks,
}

impl Counting {
    /// The names a scenario (`counting = ...`) or the kernel loader accepts.
    pub const NAMES: [&'static str; 2] = ["bytes", "acks"];

    /// The mode's name as written in a scenario.
    pub fn name(self) -> &'static str {
        match self {
            Counting::Bytes => "bytes",
            Counting::Acks => "acks",
        }
    }

    /// The mode named `name`, if any.
    pub fn from_name(name: &str) -> Option<Self> {
        match name {
            "bytes" => Some(Counting::Bytes),
            "acks" => Some(Counting::Acks),
            _ => None,
        }
    }
}

/// One algorithm's window rules at one state, as Peng et al. 2016, eq. (7) needs them to turn the
/// algorithm into a fluid model (`k_r = x_r D_r / tau_r`, `phi_r = I_r / D_r`).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct WindowRules {
    /// `I_r`: window increase per acknowledged segment in congestion avoidance (segments).
    pub increase: f64,
    /// `D_r`: window decrease per loss event, before any floor (segments); it may exceed the
    /// subflow's own window (Coupled's `w_total/2`), where the packet-level rule floors.
    pub decrease: f64,
}

/// A congestion controller for one connection's subflows.
///
/// The transport calls:
/// - [`on_ack`](Controller::on_ack) for every ACK that acknowledges new data, outside recovery;
/// - [`on_congestion_event`](Controller::on_congestion_event) once per window of losses, when
///   the subflow enters fast recovery (the controller sets `ssthresh`; the transport then runs
///   recovery with `cwnd = ssthresh`, as RFC 6675 does);
/// - [`on_rto`](Controller::on_rto) when the retransmission timer fires (the controller sets
///   `ssthresh`; the transport then sets `cwnd` to 1 segment and slow-starts again);
/// - [`on_recovery_exit`](Controller::on_recovery_exit) when recovery ends.
///
/// `i` indexes `subflows`; `subflows.len()` never changes after construction.
pub trait Controller: Send + std::fmt::Debug {
    /// The algorithm's registry name (e.g. `"lia"`).
    fn name(&self) -> &'static str;

    /// New data acknowledged on subflow `i`.
    ///
    /// How much one ACK grows the window in congestion avoidance depends on the controller's
    /// [`Counting`] (set at [`build_with_counting`](crate::build_with_counting)).
    ///
    /// The controllers grow the window on every call with `acked_bytes > 0`. Linux's
    /// `cong_avoid` hooks (Reno, CUBIC and the v0.95 coupled ones) return early when the
    /// subflow is not cwnd-limited (`tcp_is_cwnd_limited`), and RFC 9438 Section 4.6 requires
    /// such a measure of an implementation that bases `ssthresh` on `cwnd`, as these do; that
    /// test needs the sender's history, so it is the transport's to make. For an ACK that
    /// arrives while the subflow is not cwnd-limited the transport passes `acked_bytes = 0`
    /// (which must change no window): per-ACK bookkeeping read from the views still runs, as
    /// v0.95 OLIA sets `mptcp_loss3` before its own cwnd-limited test. (`pathpool-sim` does
    /// this.)
    fn on_ack(&mut self, subflows: &mut [Subflow], i: usize, ack: &Ack);

    /// A loss event (fast retransmit) on subflow `i`; set `ssthresh` and `cwnd`.
    fn on_congestion_event(&mut self, subflows: &mut [Subflow], i: usize, now: Nanos);

    /// Retransmission timeout on subflow `i`. The default sets `ssthresh` as a loss event would
    /// and the window to 1 segment, as Linux's `tcp_enter_loss` does.
    ///
    /// Call it for the first expiry only: when the timer fires again (backed off) before any
    /// new data is acknowledged, RFC 5681 Section 3.1 holds `ssthresh` constant and Linux
    /// (`tcp_enter_loss` in `TCP_CA_Loss` with `icsk_retransmits > 0`) neither recomputes it nor
    /// raises `CA_EVENT_LOSS`; the transport then only sets `cwnd = 1`. Calling it again would
    /// compute `ssthresh` from the 1-segment window (Reno: `max(1/2, 2) = 2`). The same holds
    /// for a timeout during fast recovery, whose congestion event already set `ssthresh` in
    /// this window (Linux: `TCP_CA_Recovery` before `high_seq`).
    fn on_rto(&mut self, subflows: &mut [Subflow], i: usize, now: Nanos) {
        self.on_congestion_event(subflows, i, now);
        subflows[i].cwnd = MIN_CWND;
    }

    /// The per-segment increase and per-loss decrease of subflow `i` at this state (congestion
    /// avoidance, before the window floors): what `on_ack` adds per acknowledged segment and
    /// what `on_congestion_event` takes off. Read only; fluid models take their rules from it.
    ///
    /// `None` (the default) for an algorithm whose steps are not a function of the windows,
    /// RTTs and its own loss history (CUBIC's depend on the time since the last loss, RSF's on
    /// delay and loss estimates).
    fn window_rules(&self, _subflows: &[Subflow], _i: usize) -> Option<WindowRules> {
        None
    }

    /// Recovery on subflow `i` has ended. The default deflates the window to `ssthresh`
    /// (Linux `tcp_end_cwnd_reduction`).
    fn on_recovery_exit(&mut self, subflows: &mut [Subflow], i: usize, _now: Nanos) {
        let sf = &mut subflows[i];
        sf.cwnd = sf.ssthresh.max(MIN_CWND);
    }
}

/// Linux `tcp_slow_start`: grow by the segments acknowledged, but not past `ssthresh`.
/// Returns the acknowledged segments left over once `ssthresh` is reached (for congestion
/// avoidance to use).
pub fn slow_start(sf: &mut Subflow, acked_segments: u32) -> u32 {
    let room = (sf.ssthresh - sf.cwnd).max(0.0);
    let grow = f64::from(acked_segments).min(room);
    sf.cwnd += grow;
    acked_segments - grow.ceil().min(f64::from(acked_segments)) as u32
}

/// Sum of the windows of all active subflows (segments).
pub fn total_cwnd(subflows: &[Subflow]) -> f64 {
    subflows.iter().filter(|s| s.active).map(|s| s.cwnd).sum()
}
