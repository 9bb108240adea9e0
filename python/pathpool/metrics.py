"""The rates of a flow and of its subflows, defined once for both engines.

A flow's row and its subflows' rows measure one interval, the flow's *active interval*
(:func:`active_interval`): from its start to its end, which is

- the completion of a download that completed (the last byte delivered), stop or not;
- else the flow's ``stop``, when it stops before the run ends;
- else the end of the run.

Every rate of the flow and of its subflows is bytes counted over that interval, times 8, over
its length (:func:`rate_bps`):

| column | bytes counted over the active interval |
|---|---|
| ``flows.goodput_bps`` | bytes delivered in order to the receiving application by the interval's end, each once (``delivered_bytes``) |
| ``flows.throughput_bps`` | bytes its subflows put on the wire by then, headers and retransmissions included (the sum of its subflows' below) |
| ``subflows.goodput_bps`` | data bytes acknowledged on the subflow by then (``acked_bytes``); the subflows of a flow add up to the flow's goodput, up to what is acknowledged on a subflow but not yet delivered in order (or the reverse) at the end |
| ``subflows.throughput_bps`` | bytes the subflow put on the wire by then |

The simulator computes these in Rust at the end of a run (``crates/pathpool-sim/src/conn/records.rs``
and ``world.rs``, the flow and subflow records); the Linux backend (:func:`pathpool.kernel.run.results_from_raw`)
calls the functions here. Both are held to this module by the tests (the simulator's columns
equal :func:`rate_bps` of its own counts over its own interval).

The other columns both engines fill, and where each takes them from (simulator | Linux
backend, the sender's ``tcp_info`` of each subflow at the flow's end unless said otherwise):

| column | simulator | Linux backend |
|---|---|---|
| ``delivered_bytes`` | in order at the receiving app | the receiver's bytes read by the end |
| ``acked_bytes`` | acknowledged on the subflow | ``tcpi_bytes_acked`` |
| ``sent_packets`` | data packets, retransmissions too | ``tcpi_data_segs_out`` |
| ``retransmitted_packets`` | data packets sent again | ``tcpi_total_retrans`` |
| ``completion_time_s`` | start (the first segment leaves) to last byte delivered | the sender's first write to the receiver's last byte, on the namespaces' shared monotonic clock (:func:`pathpool.kernel.run.download_time`) |
| ``min_rtt_s`` | smallest RTT sample | ``tcpi_min_rtt`` |
| ``mean_cwnd`` | time average | mean of the samples (every ``metrics.interval``, 100 ms by default): a time average |
| ``mean_rtt_s`` | mean of every RTT sample | mean of the sampled smoothed RTT (``tcpi_rtt``): not the same mean (the kernel exposes no samples) |
| ``series`` flow ``goodput_bps`` | bytes delivered in the interval | bytes the receiver's application read in the interval (its progress notes) |
| ``series`` subflow ``send_queue_bytes`` | segments sent and not acknowledged plus those queued on the subflow, times the MSS | ``tcpi_unacked`` x (``tcpi_snd_mss`` less the DSS option's bytes) + ``tcpi_notsent_bytes`` |

What the kernel does not report (loss marks, ACK counts, packets in flight at the end,
reinjections) is left empty on the Linux backend, never estimated.

On the Linux backend a subflow's bytes on the wire are not counted by the kernel: they are
``tcpi_bytes_sent`` (payload, retransmissions included) plus, per data segment sent
(``tcpi_data_segs_out``), the 52 header bytes every segment of the simulator carries (IPv4 20,
TCP 20, timestamps 12) and the options the kernel adds to each data segment (an MPTCP subflow's
DSS: :data:`pathpool.kernel.mapping.KERNEL_OPTION_BYTES`) (:func:`wire_bytes`).
"""

from __future__ import annotations

import dataclasses
import math

__all__ = ["HEADER_BYTES", "Interval", "active_interval", "rate_bps", "wire_bytes"]

#: Header bytes of every data segment on the wire, as the simulator counts them: IPv4 (20), TCP
#: (20) and the timestamp option (12). Other options come on top (``option_bytes``).
HEADER_BYTES = 52


@dataclasses.dataclass(frozen=True)
class Interval:
    """A flow's active interval on the run's clock, seconds."""

    start_s: float
    end_s: float

    @property
    def span_s(self) -> float:
        return self.end_s - self.start_s


def active_interval(start_s: float, run_end_s: float, stop_s: float | None = None,
                    completion_s: float | None = None) -> Interval:
    """The interval a flow's rates are measured over.

    Parameters
    ----------
    start_s : float
        When the flow started (its ``start``, plus its drawn start jitter), on the run's clock.
    run_end_s : float
        When the run ended.
    stop_s : float, optional
        The flow's ``stop`` (None: none).
    completion_s : float, optional
        For a download that completed: when its last byte was delivered, on the run's clock
        (None: not a download, or not complete).

    Examples
    --------
    >>> active_interval(1.0, 10.0)
    Interval(start_s=1.0, end_s=10.0)
    >>> active_interval(1.0, 10.0, stop_s=4.0).span_s
    3.0
    >>> active_interval(1.0, 10.0, stop_s=4.0, completion_s=5.5)   # a download ends at completion
    Interval(start_s=1.0, end_s=5.5)
    """
    start = min(start_s, run_end_s)
    if completion_s is not None:
        end = completion_s
    elif stop_s is not None:
        end = max(min(stop_s, run_end_s), start)
    else:
        end = run_end_s
    return Interval(start, end)


def rate_bps(nbytes: float, interval: Interval) -> float:
    """``nbytes * 8 / interval.span_s``; 0 over an empty interval (as the simulator's records).

    Examples
    --------
    >>> rate_bps(1_250_000, Interval(2.0, 4.0))
    5000000.0
    >>> rate_bps(10, Interval(3.0, 3.0))
    0.0
    """
    span = interval.span_s
    if not span > 0 or not math.isfinite(span):
        return 0.0
    return nbytes * 8 / span


def wire_bytes(payload_bytes: int, segments: int, option_bytes: int = 0) -> int:
    """Bytes on the wire of ``segments`` data segments carrying ``payload_bytes`` in all, each
    with :data:`HEADER_BYTES` of headers and ``option_bytes`` of further TCP options.

    Examples
    --------
    >>> wire_bytes(2 * 1448, 2)            # two full TCP segments: 1500 bytes each
    3000
    >>> wire_bytes(1420, 1, option_bytes=28)   # a full MPTCP segment with its DSS option
    1500
    """
    return int(payload_bytes) + int(segments) * (HEADER_BYTES + int(option_bytes))
