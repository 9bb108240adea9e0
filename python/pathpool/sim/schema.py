"""The results schema: every column of every table, its type and unit.

This is the single Python-side description of ``crates/pathpool-sim/src/output.rs``. It fixes
the column order and Arrow types of the written files (so they do not depend on pandas' type
inference) and is what the README's schema table and the tests check against.
"""

from __future__ import annotations

from dataclasses import dataclass

import pyarrow as pa

__all__ = ["SERIES_METRICS", "TABLES", "Column", "arrow_schema", "column_names"]


@dataclass(frozen=True)
class Column:
    """One column of a results table."""

    name: str
    type: str  # "uint64", "uint32", "float64" or "string"
    unit: str  # "" when dimensionless or a label
    doc: str


_ARROW = {"uint64": pa.uint64(), "uint32": pa.uint32(), "float64": pa.float64(), "string": pa.string()}

TABLES: dict[str, tuple[Column, ...]] = {
    "flows": (
        Column("seed", "uint64", "", "random seed of the run"),
        Column("flow", "string", "", "flow name from the scenario"),
        Column("kind", "string", "", '"tcp", "mptcp" or "rate"'),
        Column("algorithm", "string", "", "congestion control (see `pathpool algorithms`)"),
        Column("n_subflows", "uint32", "", "number of subflows"),
        Column("start_s", "float64", "s", "start time"),
        Column("end_s", "float64", "s", "when the flow stopped sending (stop time, completion or end of run)"),
        Column("delivered_bytes", "uint64", "bytes", "bytes delivered in order to the receiving application, each once"),
        Column("goodput_bps", "float64", "bit/s", "delivered_bytes * 8 / (end_s - start_s)"),
        Column("throughput_bps", "float64", "bit/s", "bytes put on the wire by the sender (retransmissions included) per second"),
        Column("sent_packets", "uint64", "packets", "data packets sent, retransmissions included"),
        Column("retransmitted_packets", "uint64", "packets", "data packets retransmitted"),
        Column("lost_packets", "uint64", "packets", "data packets the sender's loss detection (SACK, RTO) marked lost; can exceed dropped_packets (spurious marks)"),
        Column("rto_count", "uint64", "", "retransmission timeouts"),
        Column("completion_time_s", "float64", "s", "start to last byte delivered for a file download; empty (NaN) otherwise or if unfinished"),
        Column("received_packets", "uint64", "packets", "data packets that reached the receiver (duplicates included)"),
        Column("dropped_packets", "uint64", "packets", "data packets dropped in the network (queue overflow or random loss)"),
        Column("in_flight_packets", "uint64", "packets", "data packets still in the network at the end (sent = received + dropped + in flight)"),
        Column("ack_packets", "uint64", "packets", "pure ACKs the receiver sent"),
        Column("duplicate_segments", "uint64", "segments", "data segments that reached the connection level a second time (discarded)"),
        Column("reinjected_segments", "uint64", "segments", "segments sent again on another subflow after an RTO (MPTCP reinjection)"),
        Column("integrity_errors", "uint64", "segments", "segments with wrong content, length or position at the application (a simulator bug if not 0)"),
    ),
    "subflows": (
        Column("seed", "uint64", "", "random seed of the run"),
        Column("flow", "string", "", "flow name"),
        Column("subflow", "uint32", "", "subflow index within the flow (0 for single-path flows)"),
        Column("path", "string", "", "name of the path (route) the subflow uses"),
        Column("acked_bytes", "uint64", "bytes", "distinct data bytes this subflow got acknowledged"),
        Column("goodput_bps", "float64", "bit/s", "acked_bytes * 8 / flow duration"),
        Column("throughput_bps", "float64", "bit/s", "bytes sent on this subflow (retransmissions included) per second"),
        Column("sent_packets", "uint64", "packets", "data packets sent, retransmissions included"),
        Column("retransmitted_packets", "uint64", "packets", "data packets retransmitted"),
        Column("lost_packets", "uint64", "packets", "data packets the sender marked lost on this subflow"),
        Column("loss_events", "uint64", "", "congestion events (at most one per window)"),
        Column("rto_count", "uint64", "", "retransmission timeouts"),
        Column("mean_rtt_s", "float64", "s", "mean RTT sample"),
        Column("min_rtt_s", "float64", "s", "smallest RTT sample"),
        Column("mean_cwnd", "float64", "segments", "time-average congestion window"),
    ),
    "links": (
        Column("seed", "uint64", "", "random seed of the run"),
        Column("link", "string", "", "link name from the scenario"),
        Column("rate_bps", "float64", "bit/s", "link rate"),
        Column("delay_s", "float64", "s", "propagation delay"),
        Column("utilisation", "float64", "", "fraction of the run the transmitter was busy (0 to 1)"),
        Column("forwarded_packets", "uint64", "packets", "packets transmitted"),
        Column("queue_drops", "uint64", "packets", "packets dropped because the buffer was full"),
        Column("random_drops", "uint64", "packets", "packets dropped by random (Bernoulli / Gilbert-Elliott) loss"),
        Column("mean_queue_bytes", "float64", "bytes", "time-average queue length"),
        Column("max_queue_bytes", "uint64", "bytes", "largest queue length"),
        Column("arrived_packets", "uint64", "packets", "packets offered to the link (= forwarded + queue_drops + random_drops + queued_packets_end)"),
        Column("queued_packets_end", "uint64", "packets", "packets still in the buffer at the end of the run"),
    ),
    "series": (
        Column("seed", "uint64", "", "random seed of the run"),
        Column("time_s", "float64", "s", "sample time"),
        Column("entity", "string", "", '"flow", "subflow" or "link"'),
        Column("id", "string", "", 'flow name, "flow/subflow-index" or link name'),
        Column("metric", "string", "", 'flow: "goodput_bps" (bit/s); subflow: "cwnd" (segments), "srtt_s" (s), "in_flight" (packets), "send_queue_bytes" (bytes), "goodput_bps" (bit/s); link: "queue_bytes" (bytes)'),
        Column("value", "float64", "(per metric)", "sample value"),
    ),
    "stats": (
        Column("seed", "uint64", "", "random seed of the run"),
        Column("simulated_s", "float64", "s", "simulated time"),
        Column("events", "uint64", "", "discrete events processed"),
        Column("data_packets", "uint64", "packets", "data packets that left a sender (retransmissions included)"),
        Column("wall_s", "float64", "s", "wall-clock time of the simulation itself (not deterministic)"),
        Column("ack_packets", "uint64", "packets", "pure ACKs sent by receivers"),
        Column("packets_in_network_end", "uint64", "packets", "packets (data and ACK) still in the network at the end"),
        Column("jain_goodput", "float64", "", "Jain's fairness index of the flows' goodputs, as the simulator computes it"),
    ),
}


#: Time-series metrics per entity, with units (the simulator samples every ``metrics.interval``).
SERIES_METRICS: dict[str, dict[str, str]] = {
    "flow": {
        "goodput_bps": "bit/s (delivered to the application since the previous sample; for a rate "
        "flow, source bytes decoded in time)"
    },
    "subflow": {
        "cwnd": "segments",
        "srtt_s": "s (smoothed RTT)",
        "in_flight": "packets",
        "send_queue_bytes": "bytes (payload the subflow holds: sent and not yet acknowledged, plus data "
        "assigned to it and not yet sent, as Linux MPTCP's scheduler queues it; simulator: segments x "
        "MSS; test bed: tcp_info unacked x (snd_mss less the DSS option's bytes) + notsent_bytes)",
        "goodput_bps": "bit/s (tcp/mptcp: bytes the receiver delivered in order since the previous sample, "
        "by the subflow that carried them; the subflows' rows sum to the flow's)",
        "rate_pps": "packets/s (rate flows: the pacing rate in force on the path)",
        "throughput_bps": "bit/s (rate flows: wire bytes sent on the path since the previous sample)",
    },
    "link": {"queue_bytes": "bytes"},
}


def column_names(table: str) -> list[str]:
    """Column names of ``table`` in their fixed order."""
    return [c.name for c in TABLES[table]]


def arrow_schema(table: str) -> pa.Schema:
    """The Arrow schema ``table`` is built and written with."""
    return pa.schema([pa.field(c.name, _ARROW[c.type]) for c in TABLES[table]])
