//! What a run produces: tidy, one row per entity per seed, plus long-form time series.
//!
//! This is the contract with the Python side (`crates/pathpool-py`), which turns each table into
//! a pandas DataFrame and writes Parquet/CSV. Every rate is bits per second, every time seconds
//! (converted from integer nanoseconds only here, at the edge), every count a plain integer.
//! `f64::NAN` marks "not applicable" (e.g. the completion time of a flow that did not finish).

/// One row per flow (a single-path TCP flow, an MPTCP connection, or a rate-based flow).
#[derive(Clone, Debug, PartialEq)]
pub struct FlowRecord {
    pub seed: u64,
    pub flow: String,
    /// "tcp", "mptcp" or "rate".
    pub kind: String,
    pub algorithm: String,
    pub n_subflows: u32,
    pub start_s: f64,
    /// When the flow stopped sending (its stop time, completion, or the end of the run).
    pub end_s: f64,
    /// Bytes delivered in order to the receiving application by `end_s`, each byte once. For
    /// a flow with `stop` that is the bytes delivered by its stop time: data sent before it
    /// that arrives later is not counted (it would make the goodput of a short flow exceed
    /// its path's capacity).
    pub delivered_bytes: u64,
    /// `delivered_bytes * 8 / (end_s - start_s)`: the goodput over the flow's active interval.
    pub goodput_bps: f64,
    /// Bytes put on the wire by the sender by `end_s`, retransmissions included, per second.
    pub throughput_bps: f64,
    pub sent_packets: u64,
    pub retransmitted_packets: u64,
    pub lost_packets: u64,
    pub rto_count: u64,
    /// Seconds from start to the last byte delivered, for file downloads; NaN otherwise or if
    /// the download did not complete.
    pub completion_time_s: f64,
    /// Data packets that reached the receiver (duplicates included).
    pub received_packets: u64,
    /// Data packets dropped in the network (queue overflow or random loss).
    pub dropped_packets: u64,
    /// Data packets still in the network when the run ended
    /// (`sent = received + dropped + in_flight`).
    pub in_flight_packets: u64,
    /// Pure ACKs the receiver sent.
    pub ack_packets: u64,
    /// Data segments that reached the connection level a second time (discarded).
    pub duplicate_segments: u64,
    /// Segments sent again on another subflow after an RTO (MPTCP reinjection).
    pub reinjected_segments: u64,
    /// Segments whose content, length or window position was wrong at the receiving
    /// application (a simulator bug if not 0).
    pub integrity_errors: u64,
}

/// One row per subflow of every flow (a single-path flow has one subflow, index 0).
#[derive(Clone, Debug, PartialEq)]
pub struct SubflowRecord {
    pub seed: u64,
    pub flow: String,
    pub subflow: u32,
    /// Name of the path (route) the subflow uses.
    pub path: String,
    /// Distinct data bytes this subflow got acknowledged by the flow's `end_s` (its share of
    /// the goodput).
    pub acked_bytes: u64,
    pub goodput_bps: f64,
    pub throughput_bps: f64,
    pub sent_packets: u64,
    pub retransmitted_packets: u64,
    pub lost_packets: u64,
    /// Window reductions: fast-recovery entries plus the timeouts that reduced `ssthresh` (a
    /// re-expiry without progress, or a timeout during fast recovery, does not).
    pub loss_events: u64,
    /// Retransmission timer expiries, each backed-off re-expiry included.
    pub rto_count: u64,
    pub mean_rtt_s: f64,
    pub min_rtt_s: f64,
    /// Time-average congestion window, segments.
    pub mean_cwnd: f64,
}

/// One row per link.
#[derive(Clone, Debug, PartialEq)]
pub struct LinkRecord {
    pub seed: u64,
    pub link: String,
    pub rate_bps: f64,
    pub delay_s: f64,
    /// Fraction of the run the transmitter was busy.
    pub utilisation: f64,
    pub forwarded_packets: u64,
    pub queue_drops: u64,
    pub random_drops: u64,
    pub mean_queue_bytes: f64,
    pub max_queue_bytes: u64,
    /// Packets offered to the link (`arrived = forwarded + queue_drops + random_drops +
    /// queued_packets_end`).
    pub arrived_packets: u64,
    /// Packets still in the buffer at the end of the run.
    pub queued_packets_end: u64,
}

/// Long-form time series: one row per (time, entity, metric).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Series {
    pub seed: Vec<u64>,
    pub time_s: Vec<f64>,
    /// "flow", "subflow" or "link".
    pub entity: Vec<&'static str>,
    /// Flow name, "flow/subflow-index", or link name.
    pub id: Vec<String>,
    /// e.g. "cwnd", "srtt_s", "goodput_bps", "queue_bytes".
    pub metric: Vec<&'static str>,
    pub value: Vec<f64>,
}

impl Series {
    pub fn push(
        &mut self,
        seed: u64,
        time_s: f64,
        entity: &'static str,
        id: &str,
        metric: &'static str,
        value: f64,
    ) {
        self.seed.push(seed);
        self.time_s.push(time_s);
        self.entity.push(entity);
        self.id.push(id.to_string());
        self.metric.push(metric);
        self.value.push(value);
    }

    pub fn len(&self) -> usize {
        self.value.len()
    }

    pub fn is_empty(&self) -> bool {
        self.value.is_empty()
    }
}

/// Counters about the run itself (for `pathpool bench` and sanity checks).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct RunStats {
    pub seed: u64,
    pub simulated_s: f64,
    pub events: u64,
    /// Data packets that left a sender (retransmissions included).
    pub data_packets: u64,
    pub wall_s: f64,
    /// Pure ACKs sent by receivers.
    pub ack_packets: u64,
    /// Packets (data and ACK) still in the network at the end.
    pub packets_in_network_end: u64,
    /// Jain's fairness index of the flows' goodputs.
    pub jain_goodput: f64,
}

/// Everything one (scenario, seed) run produces.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct RunOutput {
    pub flows: Vec<FlowRecord>,
    pub subflows: Vec<SubflowRecord>,
    pub links: Vec<LinkRecord>,
    pub series: Series,
    pub stats: RunStats,
}
