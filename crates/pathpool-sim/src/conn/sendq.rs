//! Upstream Linux MPTCP's send side (`scheduler = "linux"`, `send_buffer = "linux"`): data the
//! scheduler hands to a subflow waits in that subflow's own queue until its window lets it out,
//! the scheduler picks by linger time and hands over bursts, and send buffers that grow with the
//! window bound what the writer may queue.
//!
//! Followed: Linux 6.18 as the test bed runs it, read from the mainline tree closest to it that
//! could be had (torvalds/linux at 00d46be3): `mptcp_subflow_get_send`, `__subflow_push_pending`,
//! `__mptcp_push_pending`, `__mptcp_retrans`, `mptcp_subflow_get_retrans`, `__mptcp_set_timeout`,
//! `mptcp_timeout_from_subflow`, `mptcp_reset_rtx_timer`, `mptcp_sendmsg`
//! (net/mptcp/protocol.c), `mptcp_pm_subflow_chk_stale` (net/mptcp/pm.c, its count only),
//! `__mptcp_sync_sndbuf` (net/mptcp/protocol.h), `tcp_sndbuf_expand`,
//! `tcp_should_expand_sndbuf`, `tcp_update_pacing_rate` (net/ipv4/tcp_input.c) and
//! `sk_stream_is_writeable` (include/net/sock.h).
//!
//! Simplifications, each of which the kernel does at a finer grain: memory is counted in
//! payload bytes (the kernel adds the head of an skb, about 1 KB per GSO skb of up to 64 KB,
//! and a fragment header per 32 KB page fragment); the burst and the subflow's memory are
//! checked after each segment (the kernel checks after each page fragment, up to 32 KB, so its
//! bursts can run a fragment longer); there are no backup subflows (the scenario format has no
//! way to say one is).

use std::collections::VecDeque;

use super::scheduler::wmem_queued;
use super::sender::Sender;
use crate::time::Nanos;

/// `MPTCP_SEND_BURST_SIZE`: 64 KiB less a TCP header, the option space, an IPv6 header and an
/// IPv6 fragment header (65,536 - 20 - 40 - 40 - 8).
pub const SEND_BURST: u64 = 65_428;
/// `tcp_wmem` defaults: minimum, initial and maximum send buffer of a TCP socket, bytes.
pub const TCP_WMEM: [u64; 3] = [4096, 16_384, 4_194_304];
/// `TCP_INIT_CWND`.
const INIT_CWND: u64 = 10;
/// `TCP_RTO_MIN` (200 ms): the connection-level retransmission interval when no subflow has a
/// timer pending (`__mptcp_set_timeout`).
pub const RTO_MIN: Nanos = 200_000_000;
/// The data a connection-level retransmission re-sends at most: one page fragment of the
/// writer's (`mptcp_rtx_head` is the oldest fragment; fragments are carved from 32 KB pages).
pub const RTX_FRAG: u64 = 32_768;

/// The writer's page fragments (`SKB_FRAG_PAGE_ORDER`: 32 KB pages, `skb_page_frag_refill`).
const PAGE: u64 = 32_768;
/// `sizeof(struct mptcp_data_frag)` (x86-64), at the head of each data fragment in its page.
const DFRAG_HEADER: u64 = 40;
/// `mptcp_page_frag_refill` wants room for 32 bytes and a fragment header, or a new page.
const REFILL_MIN: u64 = 32 + DFRAG_HEADER;
/// The data a fragment filling a page holds.
const DFRAG_DATA: u64 = PAGE - DFRAG_HEADER;

/// `MAX_TCP_HEADER` of the test bed's kernel: `128 + MAX_HEADER`, with `MAX_HEADER` =
/// `LL_MAX_HEADER` = 32 (no tunnel, Hyper-V or WLAN link layers configured). Measured, not
/// assumed: its subflows' `sk_sndbuf` (`ss -tmi`, `tb`) were all 2 x n x 2,304 bytes (46,080 at
/// establishment, 179,712 after a window of 39), so `roundup_pow_of_two(1,460 + MAX_TCP_HEADER +
/// 320)` is 2,048. Kernels built with tunnels (`MAX_HEADER` + 48) or larger link-layer headers
/// reach 4,096 there and charge 4,352 bytes per segment: about twice the buffer.
const MAX_TCP_HEADER: u64 = 160;

/// What `tcp_sndbuf_expand` (net/ipv4/tcp_input.c, Linux 6.18) charges per segment: the worst
/// case of one skb per segment, its head a power-of-two allocation holding the largest segment
/// (`mss_clamp`: the MSS option, `mss` + 12 bytes of timestamps), [`MAX_TCP_HEADER`] and the
/// aligned `skb_shared_info` (320 on x86-64), plus the aligned `sk_buff` itself (256): 2,304 for
/// a 1,448-byte MSS.
pub fn per_mss_truesize(mss: u32) -> u64 {
    (u64::from(mss) + 12 + MAX_TCP_HEADER + 320).next_power_of_two() + 256
}

/// `tcp_sndbuf_expand`: room for twice `max(TCP_INIT_CWND, cwnd, reordering + 1)` such
/// segments (the factor 2 of Reno and CUBIC: "Fast Recovery (RFC 5681 3.2)"), at most
/// `tcp_wmem[2]`. `reordering` is Linux's default 3, so `reordering + 1` never wins.
pub fn sndbuf_for(cwnd: u64, mss: u32) -> u64 {
    let segs = cwnd.max(INIT_CWND);
    (2 * segs * per_mss_truesize(mss)).min(TCP_WMEM[2])
}

/// `tcp_update_pacing_rate` (net/ipv4/tcp_input.c), bytes/s: `mss * max(cwnd, packets_out) /
/// srtt`, times 200% in slow start's first half (`cwnd < ssthresh / 2`, `tcp_pacing_ss_ratio`)
/// and 120% after (`tcp_pacing_ca_ratio`), in Linux's integer arithmetic on microseconds.
pub fn pacing_rate(mss: u32, cwnd: u64, ssthresh: u64, packets_out: u64, srtt: Nanos) -> u64 {
    let ratio = if cwnd < ssthresh / 2 { 200 } else { 120 };
    let rate = u64::from(mss) * 10_000 * ratio * cwnd.max(packets_out);
    // Without an RTT estimate Linux leaves the rate undivided.
    rate.checked_div(srtt / 1000).unwrap_or(rate)
}

/// `sk_gso_max_size` of a TCP socket on the test bed's devices (`GSO_LEGACY_MAX_SIZE`), bytes.
pub const GSO_MAX_SIZE_TCP: u64 = 65_536;
/// `sk_gso_max_size` of an MPTCP subflow (`MPTCP_MAX_GSO_SIZE`, net/mptcp/protocol.c), bytes.
pub const GSO_MAX_SIZE_MPTCP: u64 = 65_424;

/// `tcp_tso_segs()` (net/ipv4/tcp_output.c, Linux 6.18): the segments a GSO packet may carry,
/// from `tcp_tso_autosize()`: `sk_pacing_rate >> sk_pacing_shift` (10: about 1 ms of data) plus
/// `gso_max_size >> r` when `r = tcp_min_rtt >> tcp_tso_rtt_log` (9) is below 32 (short
/// paths), at most `gso_max_size`, in segments of `mss` bytes, at least `tcp_min_tso_segs`
/// (2). `min_rtt_us`: None before the first RTT sample (Linux's `~0U`).
pub fn tso_segs(pacing_rate: u64, min_rtt_us: Option<u64>, mss: u32, gso_max_size: u64) -> u32 {
    const PACING_SHIFT: u32 = 10;
    const TSO_RTT_LOG: u32 = 9;
    const MIN_TSO_SEGS: u64 = 2;
    let mut bytes = pacing_rate >> PACING_SHIFT;
    if let Some(r) = min_rtt_us.map(|us| us >> TSO_RTT_LOG) {
        if r < 32 {
            bytes += gso_max_size >> r;
        }
    }
    let segs = (bytes.min(gso_max_size) / u64::from(mss.max(1))).max(MIN_TSO_SEGS);
    segs.min(u64::from(u32::MAX)) as u32
}

/// Linux's integer `snd_cwnd` and `snd_ssthresh` from the controller's windows (an ssthresh
/// not yet set is `TCP_INFINITE_SSTHRESH`).
pub fn int_window(cwnd: f64, ssthresh: f64) -> (u64, u64) {
    const INFINITE: u64 = 0x7fff_ffff;
    let c = if cwnd.is_finite() && cwnd >= 1.0 {
        cwnd as u64
    } else {
        1
    };
    let s = if ssthresh.is_finite() && ssthresh < INFINITE as f64 {
        ssthresh.max(0.0) as u64
    } else {
        INFINITE
    };
    (c, s)
}

/// One subflow's part.
#[derive(Debug, Default)]
pub struct SubQueue {
    /// DSNs handed to this subflow and not yet sent on it, oldest first. They stay here until
    /// this subflow's window lets them out; nothing moves them to another subflow.
    pub queue: VecDeque<u64>,
    /// `subflow->avg_pacing_rate`, bytes/s (0 until the scheduler first looks at the subflow).
    pub avg_pacing_rate: u64,
    /// `sk_pacing_rate` as the last ACK set it, bytes/s (0 before the first: then the
    /// handshake's, taken when the scheduler first looks at the subflow).
    pub pacing_rate: u64,
    /// `sk_sndbuf`, bytes (`send_buffer = "linux"`).
    pub sndbuf: u64,
    /// The handshake's RTT: the subflow's smoothed RTT until the first data RTT sample.
    pub handshake_rtt: Nanos,
    /// `snd_sml` (`segmentation = "linux"`): the subflow sequence number just past the last
    /// short segment it sent (`tcp_minshall_update`); 0 before any.
    pub snd_sml: u64,
    /// `subflow->stale_count`: connection-level timer expiries in a row that found this
    /// subflow with data outstanding or queued and no ACK on it since the first of them
    /// (`mptcp_pm_subflow_chk_stale`); while it is not 0 the subflow's own timer does not set
    /// the connection's interval (`mptcp_timeout_from_subflow`).
    pub stale_count: u8,
    /// `subflow->stale_rcv_tstamp`: the subflow's last ACK time when the count began.
    pub stale_rcv_tstamp: Nanos,
    /// When an ACK last arrived on this subflow (`rcv_tstamp`, set for every ACK `tcp_ack`
    /// takes).
    pub rcv_tstamp: Nanos,
}

/// A connection's Linux send side.
#[derive(Debug)]
pub struct SendQ {
    pub subs: Vec<SubQueue>,
    /// `scheduler = "linux"`: the linger-time scheduler and per-subflow queues. Without it the
    /// connection keeps its own scheduler and only the writer is bounded (`buffers`).
    pub sched: bool,
    /// `send_buffer = "linux"`: send buffers bound the writer and (with `sched`) each subflow.
    pub buffers: bool,
    /// `push_flag = "linux"`: a subflow's sending pass leaves in GSO packets, each of more than
    /// one segment with PSH on its last ([`Conn::xmit_queue`](super::Conn)).
    pub gso_psh: bool,
    /// Data segments sent with PSH.
    pub psh_sent: u64,
    /// `write_seq` in segments: the application has written every DSN below it.
    pub write_end: u64,
    /// The writer waits for memory (`sk_stream_wait_memory`).
    pub writer_blocked: bool,
    /// `SOCK_NOSPACE`: the writer found no room at its last attempt and has more to write (a
    /// blocking writer sleeps in `sk_stream_wait_memory`, a poll-driven one's `poll()` said
    /// not writable); cleared when it next finds room. A subflow expands its buffer only then
    /// (`tcp_check_space`).
    pub nospace: bool,
    /// `writer = "poll"`: bytes per `send()` call (`None`: a blocking writer).
    pub poll_chunk: Option<u64>,
    /// A poll-driven writer's bytes written: its calls end anywhere in a segment, and
    /// `write_end` counts only the whole segments (Nagle holds the tail back while data is in
    /// flight, which it always is while the writer has to wait).
    pub write_bytes: u64,
    /// The connection's `sk_sndbuf`, bytes.
    pub sndbuf: u64,
    /// The connection-level retransmission timer's deadline (0: not pending) and the time of
    /// the event queued for it (`NO_EVENT`: none).
    pub rtx_deadline: Nanos,
    /// `msk->timer_ival`: the interval the timer is next armed with, as the scheduler last
    /// set it (`__mptcp_set_timeout`), `TCP_RTO_MIN` to begin with.
    pub timer_ival: Nanos,
    pub rtx_event: Nanos,
    /// `data_una` the previous pass saw (to spot a DATA_ACK's progress).
    pub seen_una: u64,
    /// The subflow whose ACK the coming pass answers (its `tcp_data_snd_check`).
    pub acked: Option<usize>,
    /// Connection-level retransmissions (`__mptcp_retrans` runs that re-sent data).
    pub retrans: u64,
    /// The MSS the buffers are sized by (payload with timestamps only: `mss_cache`).
    pub tcp_mss: u32,
    /// A single-path TCP socket (its buffer is its own) rather than an MPTCP connection.
    pub single_path: bool,
    /// `segmentation = "linux"`: the stream offsets at which the writer's data fragments
    /// (`struct mptcp_data_frag`) not yet taken by a subflow start, and the offset in the
    /// writer's current page (`pfrag->offset`; a full page to begin with: none yet).
    pub dfrag_starts: VecDeque<u64>,
    pub page_off: u64,
}

impl SendQ {
    /// One subflow per handshake RTT in `rtts`, of `mss` bytes (`mss_cache`).
    pub fn new(sched: bool, buffers: bool, mss: u32, rtts: &[Nanos], single_path: bool) -> Self {
        let subs: Vec<SubQueue> = rtts
            .iter()
            .map(|&r| SubQueue {
                // With send buffers the queue can never outgrow the largest one: room for it
                // from the start, so that no segment's push grows it later.
                queue: VecDeque::with_capacity(match (sched, buffers) {
                    (false, _) => 0,
                    (true, true) => (TCP_WMEM[2] / u64::from(mss)) as usize + 1,
                    (true, false) => 256,
                }),
                avg_pacing_rate: 0,
                pacing_rate: 0,
                // `tcp_init_buffer_space` expands once the connection is established.
                sndbuf: sndbuf_for(INIT_CWND, mss),
                handshake_rtt: r,
                snd_sml: 0,
                stale_count: 0,
                stale_rcv_tstamp: 0,
                rcv_tstamp: 0,
            })
            .collect();
        let mut q = SendQ {
            subs,
            sched,
            buffers,
            gso_psh: false,
            psh_sent: 0,
            write_end: 0,
            writer_blocked: false,
            nospace: false,
            poll_chunk: None,
            write_bytes: 0,
            sndbuf: 0,
            rtx_deadline: 0,
            timer_ival: RTO_MIN,
            rtx_event: crate::net::NO_EVENT,
            seen_una: 0,
            acked: None,
            retrans: 0,
            tcp_mss: mss,
            single_path,
            dfrag_starts: VecDeque::new(),
            page_off: PAGE,
        };
        q.sync_sndbuf();
        q
    }

    /// `__mptcp_sync_sndbuf`: the connection's buffer is `tcp_wmem[0]` plus its subflows'. A
    /// single-path TCP socket's is its own.
    pub fn sync_sndbuf(&mut self) {
        self.sndbuf = if self.single_path {
            self.subs[0].sndbuf
        } else {
            TCP_WMEM[0] + self.subs.iter().map(|s| s.sndbuf).sum::<u64>()
        };
    }

    /// `sk_stream_memory_free` of subflow `i` (`s`): its queued memory is below its buffer
    /// (always, without `buffers`).
    #[inline]
    pub fn memory_free(&self, s: &Sender, i: usize, mss: u32) -> bool {
        !self.buffers || wmem_queued(s, self.subs[i].queue.len(), mss) < self.subs[i].sndbuf
    }

    /// Subflow `i` is not yet there (`joins = "linux"`, before its handshake): no buffer of its
    /// own in the connection's sum until [`SendQ::join`].
    pub fn absent(&mut self, i: usize) {
        self.subs[i].sndbuf = 0;
        self.sync_sndbuf();
    }

    /// Subflow `i` has joined: its initial buffer (`tcp_init_buffer_space`) joins the
    /// connection's (`__mptcp_sync_sndbuf`).
    pub fn join(&mut self, i: usize) {
        self.subs[i].sndbuf = sndbuf_for(INIT_CWND, self.tcp_mss);
        self.sync_sndbuf();
    }

    /// `tcp_new_space` (from `tcp_check_space`, after an ACK's pass or a new segment sent,
    /// while the writer waits for room): `tcp_should_expand_sndbuf` (not when the window is
    /// full) then `tcp_sndbuf_expand`, which never shrinks the buffer.
    pub fn expand(&mut self, i: usize, cwnd: u64, in_flight: u64) {
        if in_flight >= cwnd {
            return;
        }
        let want = sndbuf_for(cwnd, self.tcp_mss);
        if want > self.subs[i].sndbuf {
            self.subs[i].sndbuf = want;
            self.sync_sndbuf();
        }
    }

    /// The writer (`mptcp_sendmsg` of a bulk or file source): copies while the connection's
    /// queued memory (everything not yet covered by a DATA_ACK) is below its buffer, one
    /// segment at a time; blocks when it is not; once blocked, wakes only when the free space
    /// is at least half the queued memory (`sk_stream_is_writeable`). Without `buffers` it
    /// writes everything at once. With `once`, a poll-driven writer makes one `send()` call at
    /// most. Returns whether a poll-driven writer's call copied anything.
    pub fn write(&mut self, data_una: u64, total_segs: u64, mss: u32, once: bool) -> bool {
        if !self.buffers {
            self.write_end = total_segs;
            return false;
        }
        if let Some(chunk) = self.poll_chunk {
            return self.write_polled(data_una, total_segs, mss, chunk, once);
        }
        let queued = |end: u64| (end - data_una) * u64::from(mss);
        if self.writer_blocked {
            let q = queued(self.write_end);
            if !self.writeable(q) {
                return false;
            }
            self.writer_blocked = false;
        }
        while self.write_end < total_segs && queued(self.write_end) < self.sndbuf {
            self.write_end += 1;
        }
        self.writer_blocked = self.write_end < total_segs;
        self.nospace = self.writer_blocked;
        false
    }

    /// The writer with `segmentation = "linux"`, in bytes: `una` is the stream's byte
    /// offset of the connection's DATA_ACK point, `taken` of the first byte no subflow has
    /// taken yet, `total` the bytes the application has (each writer waits as [`SendQ::write`]
    /// and [`SendQ::write_polled`] describe). `write_bytes` is what it has written: a `send()`
    /// copies a data fragment at a time while the queued memory is below the buffer
    /// ([`SendQ::copy_frag`]), a poll-driven one `write_size` bytes at most, a blocking one all
    /// the application has. `once` and the result as for [`SendQ::write`].
    pub fn write_carved(&mut self, una: u64, taken: u64, total: u64, once: bool) -> bool {
        if !self.buffers {
            // Everything is written at once, in full fragments ([`SendQ::dfrag_end`]).
            self.write_bytes = total;
            return false;
        }
        let step = self.poll_chunk;
        if step.is_none() && self.writer_blocked {
            let q = self.write_bytes - una;
            if !self.writeable(q) {
                return false;
            }
            self.writer_blocked = false;
        }
        let before = self.write_bytes;
        while self.write_bytes < total {
            let queued = self.write_bytes - una;
            match step {
                // `poll()`: writable (`sk_stream_is_writeable`), then one `send()` of `chunk`.
                Some(chunk) => {
                    if !self.writeable(queued) {
                        self.nospace = true;
                        break;
                    }
                    let mut left = chunk.min(total - self.write_bytes);
                    while left > 0 && self.write_bytes - una < self.sndbuf {
                        left -= self.copy_frag(left, taken);
                    }
                }
                // A blocking `send()` of everything the application has: a fragment at a time
                // while the buffer has room, then it sleeps.
                None if queued < self.sndbuf => {
                    self.copy_frag(total - self.write_bytes, taken);
                }
                None => break,
            }
            self.nospace = false;
            if once && step.is_some() {
                break;
            }
        }
        self.writer_blocked = step.is_none() && self.write_bytes < total;
        if step.is_none() {
            self.nospace = self.writer_blocked;
        }
        step.is_some() && self.write_bytes > before
    }

    /// Where the data fragment holding stream byte `at` ends (below `write_bytes`). Without
    /// send buffers the writer has written everything at once: fragments of full pages.
    pub fn dfrag_end(&mut self, at: u64) -> u64 {
        while self.dfrag_starts.front().is_some_and(|&s| s <= at) {
            self.dfrag_starts.pop_front();
        }
        match self.dfrag_starts.front() {
            Some(&s) => s,
            None if self.buffers => self.write_bytes,
            None => (at / DFRAG_DATA + 1) * DFRAG_DATA,
        }
    }

    /// One `send()` call's `n` bytes into the connection's data fragments (`mptcp_sendmsg`,
    /// Linux 6.18): they extend the newest fragment while it still holds data no subflow has
    /// taken (`mptcp_pending_tail`, `mptcp_frag_can_collapse_to`: `taken` is below what is
    /// written) and its page has room; else a new fragment starts, 8-byte aligned after a
    /// 40-byte header, in a new page when fewer than 72 bytes are left in this one. A fragment
    /// is where a subflow's burst may end ([`super::Conn`]'s `take_carved`). (The writers copy
    /// a fragment at a time, [`SendQ::copy_frag`], checking the buffer between.)
    #[cfg(test)]
    pub(super) fn copy(&mut self, mut n: u64, taken: u64) {
        while n > 0 {
            n -= self.copy_frag(n, taken);
        }
    }

    /// One step of `mptcp_sendmsg`'s copy loop: up to `n` bytes into the newest fragment, or a
    /// new one ([`SendQ::copy`]), no further than its page's end. Returns the bytes copied. The
    /// loop checks only that the queued memory is below the buffer before each step
    /// (`mptcp_send_limit`), so a call may leave it up to a page above. A TCP socket's step
    /// (`tcp_sendmsg_locked`) fills the tail skb up to a segment (its size goal without GSO,
    /// as on the test bed) and checks the memory before each new one.
    fn copy_frag(&mut self, n: u64, taken: u64) -> u64 {
        if self.single_path {
            let mss = u64::from(self.tcp_mss);
            let psize = (mss - self.write_bytes % mss).min(n);
            self.write_bytes += psize;
            return psize;
        }
        let extend = taken < self.write_bytes;
        if !extend || self.page_off >= PAGE {
            if PAGE - self.page_off.min(PAGE) < REFILL_MIN {
                self.page_off = 0;
            }
            self.page_off = self.page_off.next_multiple_of(8) + DFRAG_HEADER;
            if !self.single_path {
                self.dfrag_starts.push_back(self.write_bytes);
            }
        }
        let psize = (PAGE - self.page_off).min(n);
        self.page_off += psize;
        self.write_bytes += psize;
        psize
    }

    /// What one `send()` of `chunk` bytes copies with `queued` bytes in the connection's
    /// buffer, or None when the socket does not poll writable (`sk_stream_is_writeable`: free
    /// space at least half the queued memory; none free also ends a loop that would copy
    /// nothing).
    fn poll_copy(&self, queued: u64, chunk: u64) -> Option<u64> {
        let free = self.sndbuf.saturating_sub(queued);
        (free > 0 && self.writeable(queued)).then(|| chunk.min(free))
    }

    /// `sk_stream_is_writeable` with `queued` bytes in the connection's buffer: the free space
    /// is at least half of what is queued.
    fn writeable(&self, queued: u64) -> bool {
        self.sndbuf.saturating_sub(queued) >= queued / 2
    }

    /// The poll-driven writer (`writer = "poll"`): while the socket polls writable
    /// (`sk_stream_is_writeable`: free space at least half the queued memory; `mptcp_poll`
    /// and `tcp_poll` ask the same), one non-blocking `send()` of `chunk` bytes, of which
    /// `mptcp_sendmsg` copies what the buffer has room for. The queued memory therefore stays
    /// within a chunk above two thirds of the buffer, where a blocking writer fills it.
    fn write_polled(
        &mut self,
        data_una: u64,
        total_segs: u64,
        mss: u32,
        chunk: u64,
        once: bool,
    ) -> bool {
        let seg = u64::from(mss);
        let cap = total_segs.saturating_mul(seg);
        let before = self.write_bytes;
        while self.write_bytes < cap {
            let Some(n) = self.poll_copy(self.write_bytes - data_una * seg, chunk) else {
                self.nospace = true;
                break;
            };
            self.nospace = false;
            self.write_bytes = (self.write_bytes + n).min(cap);
            if once {
                break;
            }
        }
        self.write_end = if self.write_bytes >= cap {
            total_segs
        } else {
            self.write_bytes / seg
        };
        self.write_bytes > before
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::conn::scheduler::pick_linux;
    use crate::conn::scoreboard::SegPool;
    use crate::conn::Conn;
    use crate::{Scenario, Simulation};
    use pathpool_cc::Subflow;

    /// Subflow state for the scheduler: `out` segments outstanding, `queued` waiting, a window
    /// of `cwnd` (slow start), a smoothed RTT of `srtt_us`.
    fn sub(pool: &mut SegPool, out: u64, cwnd: f64, srtt_us: u64) -> (Sender, Subflow) {
        let mut s = Sender::default();
        for d in 0..out {
            s.push_new(pool, d, 0);
        }
        s.rtt_estimator(srtt_us);
        let mut v = Subflow::new(1000);
        v.cwnd = cwnd;
        (s, v)
    }

    fn two(q0: usize, q1: usize) -> (Vec<Sender>, Vec<Subflow>, SendQ) {
        let mut pool = SegPool::default();
        // A: 10 outstanding, 10 segments over 10 ms at 200%: 2,000,000 B/s.
        // B: nothing outstanding, 10 segments over 2 ms: 10,000,000 B/s.
        let (a, va) = sub(&mut pool, 10, 10.0, 10_000);
        let (b, vb) = sub(&mut pool, 0, 10.0, 2_000);
        let mut q = SendQ::new(true, false, 1000, &[1, 1], false);
        q.subs[0].queue.extend(0..q0 as u64);
        q.subs[1].queue.extend(0..q1 as u64);
        (vec![a, b], vec![va, vb], q)
    }

    /// `__mptcp_set_timeout`: the longest own timer still to run among active subflows whose
    /// stale count is 0, else `TCP_RTO_MIN`; `mptcp_pm_subflow_chk_stale`'s count.
    #[test]
    fn the_connection_timer_interval_follows_the_subflows_timers_and_stale_counts() {
        use crate::conn::scheduler::{count_stale, set_timeout};
        let (mut snd, mut views, mut q) = two(0, 0);
        let now = 1_000_000_000;
        // No subflow has its timer pending: 200 ms.
        set_timeout(&snd, &views, &mut q, now);
        assert_eq!(q.timer_ival, RTO_MIN);
        // A's timer has 300 ms to run, B's 50 ms: the longer.
        snd[0].rto_deadline = now + 300_000_000;
        snd[1].rto_deadline = now + 50_000_000;
        set_timeout(&snd, &views, &mut q, now);
        assert_eq!(q.timer_ival, 300_000_000);
        // A counted stale: B's 50 ms. B not active either: 200 ms again.
        q.subs[0].stale_count = 1;
        set_timeout(&snd, &views, &mut q, now);
        assert_eq!(q.timer_ival, 50_000_000);
        views[1].active = false;
        set_timeout(&snd, &views, &mut q, now);
        assert_eq!(q.timer_ival, RTO_MIN);
        // A timer already due counts for nothing.
        views[1].active = true;
        q.subs[0].stale_count = 0;
        snd[0].rto_deadline = now;
        set_timeout(&snd, &views, &mut q, now);
        assert_eq!(q.timer_ival, 50_000_000);

        // The count: starts at the last ACK's time, grows while no ACK comes, ends with one.
        let sub = &mut q.subs[1];
        count_stale(sub, 7);
        assert_eq!((sub.stale_count, sub.stale_rcv_tstamp), (1, 7));
        count_stale(sub, 7);
        count_stale(sub, 7);
        assert_eq!(sub.stale_count, 3);
        count_stale(sub, 9);
        assert_eq!(sub.stale_count, 0);
        count_stale(sub, 9);
        assert_eq!((sub.stale_count, sub.stale_rcv_tstamp), (1, 9));
        sub.stale_count = u8::MAX;
        count_stale(sub, 9);
        assert_eq!(sub.stale_count, u8::MAX);
    }

    #[test]
    fn the_scheduler_picks_the_lowest_linger_time() {
        // A's linger: 10,000 B << 32 / 2,000,000 B/s = 21,474,836. B's with n queued segments:
        // n * 1000 << 32 / 10,000,000, below A's while n < 50; at n = 50 they tie
        // (21,474,836) and the first in order wins.
        for (n, want) in [(0, 1), (30, 1), (49, 1), (50, 0), (60, 0)] {
            let (snd, views, mut q) = two(0, n);
            let got = pick_linux(&snd, &views, &mut q, 1000, u64::MAX).map(|p| p.0);
            assert_eq!(got, Some(want), "B with {n} queued");
        }
        // A's own queue counts too: 40 more on A (50,000 B) against 60 on B: B is 5 times
        // faster, so B still wins until its queue is 5 times A's.
        let (snd, views, mut q) = two(40, 60);
        assert_eq!(
            pick_linux(&snd, &views, &mut q, 1000, u64::MAX).map(|p| p.0),
            Some(1)
        );
        // An inactive subflow is never picked, however empty.
        let (snd, mut views, mut q) = two(0, 0);
        views[1].active = false;
        assert_eq!(
            pick_linux(&snd, &views, &mut q, 1000, u64::MAX).map(|p| p.0),
            Some(0)
        );
    }

    #[test]
    fn bursts_are_bounded_by_the_connection_window_and_average_the_pacing_rate() {
        let (snd, views, mut q) = two(0, 0);
        assert_eq!(
            pick_linux(&snd, &views, &mut q, 1000, 1_000_000),
            Some((1, 65_428))
        );
        let (snd, views, mut q) = two(0, 0);
        assert_eq!(
            pick_linux(&snd, &views, &mut q, 1000, 3_000),
            Some((1, 3_000))
        );
        // A closed window still names the pick, with nothing to send.
        let (snd, views, mut q) = two(0, 0);
        assert_eq!(pick_linux(&snd, &views, &mut q, 1000, 0), Some((1, 0)));
        // The average: A picked (B has 60 queued) with avg 1,000,000, 10,000 B queued, a
        // pacing rate of 2,000,000 and a 65,428-byte burst:
        // (1e6 * 10,000 + 2e6 * 65,428) / 75,428 = 1,867,423.
        let (snd, views, mut q) = two(0, 60);
        q.subs[0].avg_pacing_rate = 1_000_000;
        q.subs[1].avg_pacing_rate = 10_000_000;
        // A's linger at the lower average: 10,000 << 32 / 1e6 = 42,949,672; B's 60,000 << 32
        // / 1e7 = 25,769,803: B. With 100 on B (42,949,672, a tie) A comes first.
        assert_eq!(
            pick_linux(&snd, &views, &mut q, 1000, u64::MAX).map(|p| p.0),
            Some(1)
        );
        let (snd, views, mut q) = two(0, 100);
        q.subs[0].avg_pacing_rate = 1_000_000;
        q.subs[1].avg_pacing_rate = 10_000_000;
        assert_eq!(
            pick_linux(&snd, &views, &mut q, 1000, u64::MAX),
            Some((0, 65_428))
        );
        assert_eq!(q.subs[0].avg_pacing_rate, 1_867_423);
    }

    #[test]
    fn a_full_send_buffer_on_the_pick_means_no_pick() {
        // B (lowest linger) has 5 queued = 5,000 B against a 5,000-byte buffer: nothing,
        // although A has room.
        let (snd, views, mut q) = two(0, 5);
        q.buffers = true;
        q.subs[1].sndbuf = 5_000;
        assert_eq!(pick_linux(&snd, &views, &mut q, 1000, u64::MAX), None);
        q.subs[1].sndbuf = 5_001;
        assert_eq!(
            pick_linux(&snd, &views, &mut q, 1000, u64::MAX).map(|p| p.0),
            Some(1)
        );
    }

    const TWO: &str = r#"
        name = "linux_send"
        duration = "20s"
        [[links]]
        name = "a"
        rate = "10Mbps"
        delay = "10ms"
        [[links]]
        name = "b"
        rate = "10Mbps"
        delay = "20ms"
        LOSS_B
        [[paths]]
        name = "pa"
        links = ["a"]
        [[paths]]
        name = "pb"
        links = ["b"]
        [[flows]]
        name = "m"
        kind = "mptcp"
        paths = ["pa", "pb"]
        scheduler = "linux"
        send_buffer = "linux"
        send_jitter = 0
    "#;

    fn conn(sim: &mut Simulation) -> &mut Conn {
        sim.world.conn0().0
    }

    /// The first write pass, worked by hand. The connection's buffer is 4,096 + 2 * 46,080 =
    /// 96,256 B: the writer writes 67 segments of 1,448 B (66 are 95,568 B, still below) and
    /// blocks. Both subflows hold nothing (linger 0): the first takes a burst until its memory
    /// is full, 32 segments (31 are 44,888 B < 46,080, 32 are not; the burst's 65,428 B would
    /// allow 46), and sends its window of 10; then the second (linger 0) the same. Then the
    /// first has the lowest linger (its pacing rate is twice the second's: RTT 20 ms against
    /// 40 ms) but is full: nothing more, three written segments left unassigned.
    #[test]
    fn the_first_pass_queues_bursts_until_the_buffers_are_full() {
        let sc = Scenario::from_toml_str(&TWO.replace("LOSS_B", ""), "<test>").unwrap();
        let mut sim = Simulation::new(&sc, 1).unwrap();
        sim.run_until(1);
        let c = conn(&mut sim);
        let q = c.sq.as_deref().unwrap();
        assert_eq!(q.subs[0].handshake_rtt, 20_000_000);
        assert_eq!(q.subs[1].handshake_rtt, 40_000_000);
        assert_eq!(q.sndbuf, 96_256);
        assert_eq!((q.write_end, q.writer_blocked), (67, true));
        assert_eq!((c.snd[0].snd_nxt, q.subs[0].queue.len()), (10, 22));
        assert_eq!((c.snd[1].snd_nxt, q.subs[1].queue.len()), (10, 22));
        assert_eq!(c.next_dsn, 64);
        // The queues hold consecutive bursts: the first 0..32, the second 32..64.
        let q0: Vec<u64> = q.subs[0].queue.iter().copied().collect();
        let want: Vec<u64> = (10..32).collect();
        assert_eq!(q0, want);
        assert_eq!(q.subs[1].queue.front(), Some(&42));
        assert_eq!(q.subs[1].queue.back(), Some(&63));
    }

    /// Scenario `text` (a flow with `send_jitter = 0`) with Linux's segments, the test bed's
    /// writer and the flow fields `extra`, after its first write pass.
    fn carved(text: String, extra: &str) -> Simulation {
        let fields = format!(
            "send_jitter = 0\n        segmentation = \"linux\"\n        writer = \"poll\"{extra}"
        );
        let sc =
            Scenario::from_toml_str(&text.replace("send_jitter = 0", &fields), "<test>").unwrap();
        let mut sim = Simulation::new(&sc, 1).unwrap();
        sim.run_until(1);
        sim
    }

    /// `mptcp_sendmsg`'s data fragments, worked by hand. A first write of 64 KiB into no page:
    /// a fragment at offset 40 of a new page holds 32,728 bytes (the page's 32,768 less the
    /// 40-byte header), a second page the same, a third the last 80 bytes (its page offset then
    /// 120). A next write, all before it taken by subflows, starts a fragment of its own in the
    /// same page, 8-byte aligned after a header (offset 160): 32,608 bytes fit there. Written
    /// while data waits untaken, it extends the newest fragment instead (32,648 fit).
    #[test]
    fn writes_go_into_page_fragments_as_mptcp_sendmsg_cuts_them() {
        let mut q = SendQ::new(true, true, 1448, &[1], false);
        q.copy(65_536, 0);
        assert_eq!(q.dfrag_starts, [0, 32_728, 65_456]);
        assert_eq!((q.write_bytes, q.page_off), (65_536, 120));
        let mut taken = q.clone_starts_and(|q| q.copy(40_000, 65_536));
        assert_eq!(taken.dfrag_starts, [0, 32_728, 65_456, 65_536, 98_144]);
        assert_eq!(taken.page_off, 40 + 40_000 - 32_608);
        taken = q.clone_starts_and(|q| q.copy(40_000, 65_000));
        assert_eq!(taken.dfrag_starts, [0, 32_728, 65_456, 98_184]);
        // A fragment's end, for a subflow taking data: the next start, else the written end.
        assert_eq!(taken.dfrag_end(100), 32_728);
        assert_eq!(taken.dfrag_end(98_184), 105_536);
        // Without send buffers everything is written at once, in full pages' fragments.
        let mut u = SendQ::new(true, false, 1448, &[1], false);
        u.write_carved(0, 0, u64::MAX, false);
        assert_eq!(
            (u.write_bytes, u.dfrag_end(0), u.dfrag_end(32_728)),
            (u64::MAX, 32_728, 65_456)
        );
    }

    impl SendQ {
        /// A copy of the writer's state (the fragments), changed by `f`.
        fn clone_starts_and(&self, f: impl FnOnce(&mut SendQ)) -> SendQ {
            let mut q = SendQ::new(true, true, self.tcp_mss, &[1], false);
            q.dfrag_starts = self.dfrag_starts.clone();
            (q.write_bytes, q.page_off) = (self.write_bytes, self.page_off);
            f(&mut q);
            q
        }
    }

    /// `segmentation = "linux"` and the test bed's writer (64 KiB per `send()`), the first
    /// write pass worked by hand. The writer writes 65,536 bytes (then 30,720 of the 96,256-byte
    /// buffer are free, less than half of what is queued: no more). Fragments: 0, 32,728,
    /// 65,456 (above). The first subflow (linger 0, first in order) takes whole fragments with a
    /// burst of 65,428 bytes: the first, 22 full segments and a short 872 bytes at its end;
    /// the burst is not spent and its buffer not full (23 segments, 33,304 < 46,080 B), so the
    /// second fragment, whose first 576 bytes complete the short segment (its mapping goes
    /// on), then 22 full and 296 bytes: 65,456 bytes taken, the burst spent (-28). It sends its
    /// window of 10. The second subflow (nothing queued: linger 0) takes the last fragment, 80
    /// bytes, and sends it at once: no earlier short segment of its own is unacknowledged.
    #[test]
    fn a_burst_takes_whole_fragments_and_each_fragment_end_it_stops_at_is_short() {
        let mut sim = carved(TWO.replace("LOSS_B", ""), "");
        let c = conn(&mut sim);
        let q = c.sq.as_deref().unwrap();
        let cuts = c.cuts.as_deref().unwrap();
        assert_eq!(q.write_bytes, 65_536);
        assert_eq!((c.next_dsn, c.next_byte), (47, 65_536));
        let lens: Vec<u32> = (0..47).map(|d| cuts.len(d, 1448)).collect();
        let mut want = vec![1448; 45];
        want.extend([296, 80]);
        assert_eq!(lens, want);
        assert_eq!((c.snd[0].snd_nxt, q.subs[0].queue.len()), (10, 36));
        assert_eq!(q.subs[0].queue.back(), Some(&45));
        assert_eq!((c.snd[1].snd_nxt, q.subs[1].queue.len()), (1, 0));
        assert_eq!(c.snd[1].seg(0).payload(), 80);
        assert_eq!(q.subs[1].snd_sml, 1);
        assert_eq!(cuts.offset(46, 1448), 65_456);
    }

    /// Each `send()` of a poll-driven writer ends in a push (`mptcp_sendmsg` calls
    /// `__mptcp_push_pending`), so a pick sees only what that call wrote. With 16 KiB calls the
    /// first subflow (linger 0) takes the first call's 16,384 bytes, 11 full segments and 456
    /// bytes, though its burst would allow 65,428: the second call's data is not written yet.
    /// The second subflow (now linger 0) takes the second call's. The short tail is not grown by
    /// the third call's data, which the first subflow also takes: its mapping does not continue
    /// there. Written all at once first, the first subflow would have taken fragments up to its
    /// burst.
    #[test]
    fn each_send_call_is_pushed_before_the_next() {
        let mut sim = carved(
            TWO.replace("LOSS_B", ""),
            "\n        write_size = \"16KiB\"",
        );
        let c = conn(&mut sim);
        let q = c.sq.as_deref().unwrap();
        let cuts = c.cuts.as_deref().unwrap();
        let first: Vec<u64> = (0..c.snd[0].snd_nxt)
            .map(|s| c.snd[0].seg(s).dsn())
            .chain(q.subs[0].queue.iter().copied())
            .collect();
        // Its first take is the first call's, 0..=11; its next (DSN 24 on) is the third call's.
        assert_eq!(first[..13], (0..12).chain([24]).collect::<Vec<u64>>());
        assert_eq!((cuts.len(11, 1448), cuts.offset(12, 1448)), (456, 16_384));
        assert_eq!(c.snd[1].seg(0).dsn(), 12);
        // Without the per-call push the writer's calls, by themselves, write on while the
        // socket polls writable: six of them fill 98,304 > 96,256 - at most.
        let mut w = SendQ::new(true, true, 1448, &[1, 1], false);
        w.poll_chunk = Some(16_384);
        assert!(w.write_carved(0, 0, u64::MAX, true));
        assert_eq!(w.write_bytes, 16_384);
        w.write_carved(0, 16_384, u64::MAX, false);
        assert_eq!(w.write_bytes, 65_536);
    }

    /// `mptcp_sendmsg` checks the buffer before each page fragment it copies
    /// (`mptcp_send_limit`), not against what the copy adds: a 64 KiB `send()` into a 50,176-byte
    /// buffer copies two fragments (32,728 bytes each) and stops at 65,456, above the buffer, as
    /// the bed's sampled `sk_wmem_queued` (98,304 under a 96,256-byte buffer) is. The next
    /// `poll()` then says not writable.
    #[test]
    fn a_write_checks_the_buffer_before_each_fragment_not_after() {
        let mut q = SendQ::new(true, true, 1448, &[1], false);
        q.poll_chunk = Some(65_536);
        assert_eq!(q.sndbuf, 50_176);
        assert!(q.write_carved(0, 0, u64::MAX, true));
        assert_eq!(q.write_bytes, 65_456);
        assert!(!q.nospace);
        assert!(!q.write_carved(0, 0, u64::MAX, true));
        assert!(q.nospace);
        // A TCP socket checks before each segment: 46,080 is reached within the 32nd.
        let mut t = SendQ::new(true, true, 1448, &[1], true);
        t.poll_chunk = Some(65_536);
        t.write_carved(0, 0, u64::MAX, true);
        assert_eq!(t.write_bytes, 32 * 1448);
    }

    /// Each subflow's buffer follows its window in slow start: after each new segment sent
    /// (`tcp_event_new_data_sent` -> `tcp_check_space`) the window still has room for the
    /// ACK's second segment, so the buffer grows to 2 x cwnd segments of 2,304 bytes while the
    /// writer waits for room.
    #[test]
    fn a_subflows_buffer_follows_its_window_in_slow_start() {
        let text = TWO.replace("LOSS_B", "");
        let mut sim = carved(text, "");
        for t in [45_000_000, 70_000_000, 95_000_000] {
            sim.run_until(t);
            let c = conn(&mut sim);
            let q = c.sq.as_deref().unwrap();
            for i in 0..2 {
                let (cwnd, _) = int_window(c.views[i].cwnd, c.views[i].ssthresh);
                assert!(cwnd > 10, "{t} {i}: still in its first window");
                // The last segment sent filled the window the ACK before it had opened.
                assert!(
                    q.subs[i].sndbuf == sndbuf_for(cwnd, 1448)
                        || q.subs[i].sndbuf == sndbuf_for(cwnd - 1, 1448),
                    "{t} {i}: cwnd {cwnd}, sndbuf {}",
                    q.subs[i].sndbuf
                );
            }
        }
    }

    /// A TCP flow (`kind = "tcp"`) with `segmentation = "linux"`: no data fragments, its one
    /// subflow takes all that is written. The first write copies a segment at a time while the
    /// socket's own 46,080-byte buffer has room (`tcp_sendmsg_locked`): 32 full segments,
    /// 46,336 bytes of its 64 KiB, none short (a write is cut short only where it ends).
    #[test]
    fn a_tcp_flow_cuts_only_where_the_written_data_ends() {
        let tcp = TWO.replace("LOSS_B", "").replace(
            "kind = \"mptcp\"\n        paths = [\"pa\", \"pb\"]",
            "kind = \"tcp\"\n        path = \"pa\"",
        );
        let mut sim = carved(tcp, "");
        let c = conn(&mut sim);
        let q = c.sq.as_deref().unwrap();
        assert_eq!(
            (q.write_bytes, c.next_byte, c.next_dsn),
            (46_336, 46_336, 32)
        );
        assert!(q.dfrag_starts.is_empty());
        let cuts = c.cuts.as_deref().unwrap();
        let lens: Vec<u32> = (0..32).map(|d| cuts.len(d, 1448)).collect();
        assert_eq!(lens, vec![1448; 32]);
    }

    /// A short tail waits while its subflow has a short segment unacknowledged (Nagle with
    /// Minshall's check), and grows when more data for that subflow continues it. From the pass
    /// above (the second subflow's 80 bytes unacknowledged): 100 bytes written and taken by the
    /// second subflow stay queued; 2,000 more grow them to a full segment (1,348 bytes) and
    /// leave 652 in a new short one; the full one goes, the short one waits, until the 80-byte
    /// segment is acknowledged.
    #[test]
    fn a_short_tail_waits_for_the_short_segment_before_it_and_grows_meanwhile() {
        let mut sim = carved(TWO.replace("LOSS_B", ""), "");
        let (c, net) = sim.world.conn0();
        let mut pool = SegPool::default();
        let write = |c: &mut Conn, n: u64| {
            let taken = c.next_byte;
            c.sq.as_deref_mut().unwrap().copy(n, taken);
        };
        write(c, 100);
        assert!(c.take_carved(1, 65_428));
        c.xmit_queue(net, &mut pool, 0, 1);
        assert_eq!((c.snd[1].snd_nxt, c.next_dsn), (1, 48));
        assert_eq!(c.cuts.as_deref().unwrap().len(47, 1448), 100);
        write(c, 2_000);
        assert!(c.take_carved(1, 65_428));
        let cuts = c.cuts.as_deref().unwrap();
        assert_eq!((cuts.len(47, 1448), cuts.len(48, 1448)), (1448, 652));
        c.xmit_queue(net, &mut pool, 0, 1);
        assert_eq!(c.snd[1].snd_nxt, 2);
        assert_eq!(c.sq.as_deref().unwrap().subs[1].queue, [48]);
        // With the 80 bytes acknowledged (`snd_sml` no longer above `snd_una`) it goes.
        c.sq.as_deref_mut().unwrap().subs[1].snd_sml = 0;
        c.xmit_queue(net, &mut pool, 0, 1);
        assert_eq!(c.snd[1].snd_nxt, 3);
        assert_eq!(
            (
                c.snd[1].seg(2).payload(),
                c.sq.as_deref().unwrap().subs[1].snd_sml
            ),
            (652, 3)
        );
    }

    /// The connection-level timer is armed with the interval the scheduler last set, not one
    /// worked out when it is armed (`mptcp_reset_rtx_timer` reads `msk->timer_ival`); an
    /// expiry counts every subflow with data outstanding as possibly stale, from its last ACK.
    #[test]
    fn the_connection_timer_uses_the_stored_interval_and_counts_stale_subflows() {
        let mut sim = with_joins("together");
        sim.run_until(500_000_000);
        let (c, net, segs) = sim.world.conn0_segs();
        let now = net.now;
        assert!(c.snd[0].outstanding() > 0 && c.snd[1].outstanding() > 0);
        // Both subflows' timers have longer than 123 ms to run: the stored value is used.
        c.snd[0].rto_deadline = now + 400_000_000;
        c.snd[1].rto_deadline = now + 300_000_000;
        c.sq.as_deref_mut().unwrap().timer_ival = 123_000_000;
        c.reset_data_rtx(net, 0);
        assert_eq!(c.sq.as_deref().unwrap().rtx_deadline, now + 123_000_000);
        // An expiry now: both subflows have data outstanding, so each begins its count at its
        // last ACK.
        let q = c.sq.as_deref_mut().unwrap();
        (q.rtx_deadline, q.rtx_event) = (now, now);
        c.on_data_rtx(net, segs, 0);
        let q = c.sq.as_deref().unwrap();
        for i in 0..2 {
            assert_eq!(
                (q.subs[i].stale_count, q.subs[i].stale_rcv_tstamp),
                (1, q.subs[i].rcv_tstamp)
            );
            assert!(q.subs[i].rcv_tstamp > 0);
        }
        // Re-armed with the stored interval.
        assert_eq!(q.rtx_deadline, now + 123_000_000);
    }

    /// The lossless two-path scenario with `joins = joins`.
    fn with_joins(joins: &str) -> Simulation {
        let text = TWO.replace("LOSS_B", "").replace(
            "send_jitter = 0",
            &format!("send_jitter = 0\n        joins = \"{joins}\""),
        );
        Simulation::new(&Scenario::from_toml_str(&text, "<test>").unwrap(), 1).unwrap()
    }

    /// `joins = "linux"`, worked by hand: the first segment (1,500 B at 10 Mbit/s: 1.2 ms)
    /// reaches the receiver at 11.2 ms and its ACK (no link on the way back) returns at
    /// 21.2 ms; the second subflow's MP_JOIN handshake then takes two of its 40 ms round trips.
    /// Its send buffer joins the connection's with its SYN/ACK at 61.2 ms
    /// (`mptcp_finish_join` -> `mptcp_propagate_sndbuf`); until 101.2 ms it sends nothing and
    /// is outside the coupled sums; from then on it is a subflow like the first, and its
    /// initial window goes out with the next data written. With `joins = "together"` both
    /// send at 0.
    #[test]
    fn a_joined_subflow_starts_two_of_its_round_trips_after_the_first_ack() {
        let mut sim = with_joins("linux");
        sim.run_until(1);
        // Before its join the second subflow has no buffer in the connection's sum: 4,096 +
        // 46,080 (the first's initial buffer), where both together make 96,256.
        assert_eq!(conn(&mut sim).sq.as_deref().unwrap().sndbuf, 50_176);
        sim.run_until(61_199_999);
        assert_eq!(conn(&mut sim).sq.as_deref().unwrap().subs[1].sndbuf, 0);
        sim.run_until(61_200_000);
        let q = conn(&mut sim).sq.as_deref().unwrap();
        assert_eq!(q.subs[1].sndbuf, 46_080);
        assert_eq!(q.sndbuf, 4_096 + q.subs[0].sndbuf + 46_080);
        sim.run_until(101_199_999);
        let c = conn(&mut sim);
        assert!(!c.views[1].active && c.snd[1].snd_nxt == 0);
        assert!(c.snd[0].snd_nxt > 10, "the first subflow sends alone");
        sim.run_until(101_200_000);
        assert!(conn(&mut sim).views[1].active);
        // It takes its first burst once the writer has new data: here the blocked writer
        // wakes (a third of the buffer free) between 105 and 150 ms.
        sim.run_until(105_000_000);
        assert!(conn(&mut sim).sq.as_deref().unwrap().writer_blocked);
        sim.run_until(150_000_000);
        assert!(conn(&mut sim).snd[1].snd_nxt >= 10);
        let sc = Scenario::from_toml_str(&TWO.replace("LOSS_B", ""), "<test>").unwrap();
        let mut sim = Simulation::new(&sc, 1).unwrap();
        sim.run_until(1);
        assert_eq!(conn(&mut sim).snd[1].snd_nxt, 10);
    }

    /// `joins = "linux_peer_first"`: the peer's first byte made the connection fully
    /// established before the start, so the second subflow's two 40 ms round trips run from
    /// 0: its buffer counts from 40 ms, it takes part from 80 ms (not 61.2 and 101.2 ms as
    /// after the first ACK).
    #[test]
    fn a_join_after_the_peer_sent_first_starts_with_the_application() {
        let mut sim = with_joins("linux_peer_first");
        sim.run_until(39_999_999);
        assert_eq!(conn(&mut sim).sq.as_deref().unwrap().subs[1].sndbuf, 0);
        sim.run_until(40_000_000);
        assert_eq!(conn(&mut sim).sq.as_deref().unwrap().subs[1].sndbuf, 46_080);
        sim.run_until(79_999_999);
        assert!(!conn(&mut sim).views[1].active);
        sim.run_until(80_000_000);
        assert!(conn(&mut sim).views[1].active);
    }

    /// Path b loses everything. What was queued on its subflow stays there (its own timeouts
    /// move nothing); only the connection-level timer re-sends the oldest unacknowledged data,
    /// on the subflow with nothing outstanding, so the connection still makes progress, and
    /// every byte arrives once, in order.
    #[test]
    fn data_behind_a_dead_subflow_stays_and_the_connection_timer_resends_it() {
        let text = TWO.replace("LOSS_B", "loss = 1.0");
        let sc = Scenario::from_toml_str(&text, "<test>").unwrap();
        let mut sim = Simulation::new(&sc, 1).unwrap();
        sim.run_until(1);
        let first: Vec<u64> = conn(&mut sim).sq.as_deref().unwrap().subs[1]
            .queue
            .iter()
            .copied()
            .collect();
        sim.run_until(20_000_000_000);
        let c = conn(&mut sim);
        let q = c.sq.as_deref().unwrap();
        // Still queued on b, in order: what it was given at the start and has not sent itself
        // (it sends a segment per expiry of its own timer at most), whatever came after.
        let now: Vec<u64> = q.subs[1].queue.iter().copied().collect();
        let pos = first.iter().position(|d| now.first() == Some(d));
        let pos = pos.unwrap_or_else(|| panic!("{now:?} lost the head of {first:?}"));
        assert!(now.starts_with(&first[pos..]), "{now:?} of {first:?}");
        assert!(pos < first.len() / 2, "b sent {pos} of {}", first.len());
        assert!(c.snd[1].rto_count > 3);
        assert!(q.retrans > 0 && c.reinjected > 0);
        // Progress well beyond b's data (slow: the connection's timer waits as long as the
        // longest subflow timer, b's, backed off), delivered exactly once.
        assert!(c.data.rcv_nxt > 2 * 107, "{}", c.data.rcv_nxt);
        assert_eq!(c.data.integrity_errors, 0);
        assert_eq!(c.data.window_violations, 0);
        assert_eq!(c.data.delivered_segs, c.data.rcv_nxt);
        assert_eq!(c.data.delivered_by_subflow[1], 0);
    }

    /// A file over two lossy paths: it completes, every byte delivered once; what the
    /// subflows got acknowledged adds up to what was delivered; the buffers only grew.
    #[test]
    fn a_download_conserves_its_bytes_and_buffers_grow_with_the_window() {
        let text = TWO.replace("LOSS_B", "loss = 0.01").replace(
            "send_jitter = 0",
            "send_jitter = 0\napp = \"file\"\nsize = \"3MB\"",
        );
        let sc = Scenario::from_toml_str(&text, "<test>").unwrap();
        let mut sim = Simulation::new(&sc, 3).unwrap();
        sim.run_until(20_000_000_000);
        {
            let c = conn(&mut sim);
            let q = c.sq.as_deref().unwrap();
            for s in &q.subs {
                assert!(s.sndbuf >= 46_080 && s.sndbuf % 4_608 == 0, "{}", s.sndbuf);
            }
            assert_eq!(
                q.sndbuf,
                4096 + q.subs.iter().map(|s| s.sndbuf).sum::<u64>()
            );
            assert!(q.subs.iter().all(|s| s.queue.is_empty()));
            assert_eq!(q.write_end, c.total_segs);
        }
        let out = sim.finish();
        let f = &out.flows[0];
        assert!(f.completion_time_s.is_finite());
        assert_eq!(f.delivered_bytes, 3_000_000);
        assert_eq!(f.integrity_errors, 0);
        let acked: u64 = out.subflows.iter().map(|s| s.acked_bytes).sum();
        assert_eq!(acked, 3_000_000);
    }

    #[test]
    fn truesize_and_sndbuf_follow_tcp_sndbuf_expand() {
        // 1448 + 12 + 160 + 320 = 1940 -> 2048, + 256.
        assert_eq!(per_mss_truesize(1448), 2304);
        // 1424 (DSS) still rounds to 2048: mss_clamp is the MSS option, options aside.
        assert_eq!(per_mss_truesize(1424), 2304);
        // 9000 + 492 = 9492 -> 16384, + 256.
        assert_eq!(per_mss_truesize(9000), 16_640);
        // At establishment: 2 * 10 * 2304, the test bed's subflows' `tb` (ss -tmi).
        assert_eq!(sndbuf_for(1, 1448), 46_080);
        assert_eq!(sndbuf_for(10, 1448), 46_080);
        // cwnd 39: 2 * 39 * 2304 = 179,712, another `tb` seen on the test bed.
        assert_eq!(sndbuf_for(39, 1448), 179_712);
        // Capped at tcp_wmem[2].
        assert_eq!(sndbuf_for(1000, 1448), 4_194_304);
    }

    #[test]
    fn buffers_grow_only_with_room_in_the_window_and_never_shrink() {
        let mut q = SendQ::new(true, true, 1448, &[10_000_000, 10_000_000], false);
        assert_eq!(q.sndbuf, 4096 + 2 * 46_080);
        // A full window: no growth.
        q.expand(0, 40, 40);
        assert_eq!(q.subs[0].sndbuf, 46_080);
        // Room: 2 * 40 * 2304 = 184,320; the connection's follows.
        q.expand(0, 40, 39);
        assert_eq!(q.subs[0].sndbuf, 184_320);
        assert_eq!(q.sndbuf, 4096 + 184_320 + 46_080);
        // A smaller window later never shrinks it.
        q.expand(0, 12, 0);
        assert_eq!(q.subs[0].sndbuf, 184_320);
        // A single-path socket's buffer is its own.
        let t = SendQ::new(false, true, 1448, &[1], true);
        assert_eq!(t.sndbuf, 46_080);
    }

    #[test]
    fn tso_segs_is_linux_autosizing() {
        // 20 Mbit/s shared three ways: ~1 MB/s >> 10 = 976 bytes < one segment: the minimum, 2.
        assert_eq!(tso_segs(1_000_000, Some(40_000), 1448, GSO_MAX_SIZE_TCP), 2);
        // 100 Mbit/s at 120%: 15 MB/s >> 10 = 14,648 bytes = 10 segments of 1,448 (40 ms min RTT:
        // 40,000 >> 9 = 78, no short-path term).
        assert_eq!(
            tso_segs(15_000_000, Some(40_000), 1448, GSO_MAX_SIZE_TCP),
            10
        );
        // A 1 ms path: r = 1000 >> 9 = 1, so 65,536 >> 1 = 32,768 bytes more: (976 + 32,768) /
        // 1,448 = 23 segments.
        assert_eq!(tso_segs(1_000_000, Some(1_000), 1448, GSO_MAX_SIZE_TCP), 23);
        // Never beyond gso_max_size: 65,424 / 1,424 = 45 for an MPTCP subflow.
        assert_eq!(
            tso_segs(u64::MAX >> 4, Some(100), 1424, GSO_MAX_SIZE_MPTCP),
            45
        );
        // Before an RTT sample nothing is added.
        assert_eq!(tso_segs(1_000_000, None, 1448, GSO_MAX_SIZE_TCP), 2);
    }

    #[test]
    fn pacing_rate_is_linux_integer_arithmetic() {
        // 1448 B * 10 segments / 10 ms * 200% (slow start, ssthresh infinite) = 2,896,000 B/s.
        let (c, s) = int_window(10.0, f64::INFINITY);
        assert_eq!((c, s), (10, 0x7fff_ffff));
        assert_eq!(pacing_rate(1448, c, s, 0, 10_000_000), 2_896_000);
        // Congestion avoidance (cwnd >= ssthresh / 2): 120%; packets_out above cwnd counts.
        assert_eq!(
            pacing_rate(1448, 20, 30, 25, 50_000_000),
            1448 * 25 * 120 * 10_000 / 50_000
        );
        assert_eq!(pacing_rate(1448, 20, 30, 25, 50_000_000), 868_800);
    }

    #[test]
    fn writer_blocks_at_the_buffer_and_wakes_at_a_third_free() {
        let mut q = SendQ::new(true, true, 1000, &[1, 1], false);
        q.sndbuf = 10_000;
        q.write(0, u64::MAX, 1000, false);
        // Writes while queued < 10,000: 10 segments, then blocks.
        assert_eq!(q.write_end, 10);
        assert!(q.writer_blocked);
        // 2 acknowledged: 8,000 queued, 2,000 free < 4,000: still asleep.
        q.write(2, u64::MAX, 1000, false);
        assert_eq!(q.write_end, 10);
        // 4 acknowledged: 6,000 queued, 4,000 free >= 3,000: wakes and fills to 10,000.
        q.write(4, u64::MAX, 1000, false);
        assert_eq!(q.write_end, 14);
        assert!(q.writer_blocked);
        // A file ends: the writer stops at its last segment and is not blocked.
        let mut f = SendQ::new(true, true, 1000, &[1, 1], false);
        f.sndbuf = 10_000;
        f.write(0, 3, 1000, false);
        assert_eq!((f.write_end, f.writer_blocked), (3, false));
        // Without buffers everything is written at once.
        let mut u = SendQ::new(true, false, 1000, &[1, 1], false);
        u.write(0, 7, 1000, false);
        assert_eq!(u.write_end, 7);
    }

    #[test]
    fn a_poll_writer_writes_a_chunk_while_the_socket_polls_writable() {
        let polled = |chunk: u64| {
            let mut q = SendQ::new(true, true, 1000, &[1, 1], false);
            q.sndbuf = 10_000;
            q.poll_chunk = Some(chunk);
            q
        };
        let mut q = polled(2_500);
        // 0 queued: writable; 2,500 (7,500 free >= 1,250) and 5,000 (5,000 >= 2,500): again;
        // 7,500 (2,500 < 3,750): no longer. 7,500 bytes: 7 whole segments, where a blocking
        // writer fills all 10.
        q.write(0, u64::MAX, 1000, false);
        assert_eq!(
            (q.write_bytes, q.write_end, q.writer_blocked),
            (7_500, 7, false)
        );
        // 2 acknowledged: 5,500 queued, 4,500 free >= 2,750: one chunk to 10,000 bytes
        // (8,000 queued, 2,000 free < 4,000).
        q.write(2, u64::MAX, 1000, false);
        assert_eq!((q.write_bytes, q.write_end), (10_000, 10));
        // 5 acknowledged: 5,000 queued, 5,000 free: one chunk, then 2,500 < 3,750.
        q.write(5, u64::MAX, 1000, false);
        assert_eq!((q.write_bytes, q.write_end), (12_500, 12));
        // A chunk larger than the room: send() copies what fits.
        let mut q = polled(8_000);
        q.write(0, u64::MAX, 1000, false);
        assert_eq!(q.write_bytes, 8_000);
        // 1 acknowledged: 7,000 queued, 3,000 free < 3,500: not writable.
        q.write(1, u64::MAX, 1000, false);
        assert_eq!(q.write_bytes, 8_000);
        // 2 acknowledged: 6,000 queued, 4,000 free >= 3,000: 4,000 copied, the buffer full.
        q.write(2, u64::MAX, 1000, false);
        assert_eq!((q.write_bytes, q.write_end), (12_000, 12));
        // A file ends at its last segment, whatever the chunk.
        let mut f = polled(2_500);
        f.write(0, 3, 1000, false);
        assert_eq!((f.write_bytes, f.write_end), (3_000, 3));
    }
}

#[cfg(test)]
mod idle_tests {
    use crate::conn::{cwnd_restart, Conn};
    use crate::{Scenario, Simulation};

    const RTO: u64 = 200_000_000;

    #[test]
    fn cwnd_restart_halves_per_rto_of_idle_down_to_the_restart_window() {
        // ssthresh 20, cwnd 40: ssthresh max(20, 20 + 10) = 30. 3.5 RTOs idle: 2.5 left
        // after the first -> 20, 1.5 -> 10, then at the restart window min(10, 40) = 10.
        assert_eq!(
            cwnd_restart(40.7, 20.0, false, 7 * RTO / 2, RTO),
            (10.0, 30.0)
        );
        // 1.5 RTOs: one halving.
        assert_eq!(
            cwnd_restart(40.0, 20.0, false, 3 * RTO / 2, RTO),
            (20.0, 30.0)
        );
        // Exactly 2 RTOs: the second subtraction leaves 0, which stops it: one halving.
        assert_eq!(cwnd_restart(40.0, 50.0, false, 2 * RTO, RTO), (20.0, 50.0));
        // A window below 10 stays (restart window min(10, cwnd)); ssthresh 3/4 of 7 = 3 + 1.
        assert_eq!(cwnd_restart(7.0, 2.0, false, 100 * RTO, RTO), (7.0, 4.0));
        // During a reduction ssthresh stays.
        assert_eq!(
            cwnd_restart(40.0, 12.0, true, 3 * RTO / 2, RTO),
            (20.0, 12.0)
        );
    }

    fn download(restart: bool) -> Simulation {
        let text = format!(
            r#"
            name = "idle"
            duration = "10s"
            [[links]]
            name = "a"
            rate = "10Mbps"
            delay = "10ms"
            [[paths]]
            name = "pa"
            links = ["a"]
            [[flows]]
            name = "t"
            kind = "tcp"
            path = "pa"
            app = "file"
            size = "300KB"
            slow_start_after_idle = {restart}
        "#
        );
        let sc = Scenario::from_toml_str(&text, "<test>").unwrap();
        let mut sim = Simulation::new(&sc, 1).unwrap();
        sim.run_until(5_000_000_000);
        sim
    }

    fn conn(sim: &mut Simulation) -> &mut Conn {
        sim.world.conn0().0
    }

    /// A download that finished long ago: new data now restarts the window as
    /// `tcp_cwnd_restart` says for the time since the last segment; without the option, or
    /// within an RTO of it, nothing changes.
    #[test]
    fn new_data_after_idle_restarts_the_window() {
        let now = 5_000_000_000;
        let mut sim = download(true);
        let c = conn(&mut sim);
        assert!(c.completion.is_some() && c.snd[0].outstanding() == 0);
        let (s, v) = (&c.snd[0], &c.views[0]);
        assert!(v.cwnd > 20.0 && s.lsndtime > 0 && s.lsndtime < 1_000_000_000);
        let want = cwnd_restart(v.cwnd, v.ssthresh, false, now - s.lsndtime, s.rto);
        c.idle_check(0, now);
        assert_eq!((c.views[0].cwnd, c.views[0].ssthresh), want);
        assert_eq!(c.views[0].cwnd, 10.0);
        assert_eq!(c.snd[0].idle_restarts, 1);
        // Within an RTO of the last segment: nothing.
        let mut sim = download(true);
        let c = conn(&mut sim);
        let (cwnd, at) = (c.views[0].cwnd, c.snd[0].lsndtime + c.snd[0].rto);
        c.idle_check(0, at);
        assert_eq!((c.views[0].cwnd, c.snd[0].idle_restarts), (cwnd, 0));
        // Without the option: nothing.
        let mut sim = download(false);
        let c = conn(&mut sim);
        let cwnd = c.views[0].cwnd;
        c.idle_check(0, now);
        assert_eq!((c.views[0].cwnd, c.snd[0].idle_restarts), (cwnd, 0));
    }
}

#[cfg(test)]
mod reading_tests {
    use crate::config::{DelayedAck, PushFlag, Recovery, Scheduler, SendBuffer, WindowArithmetic};
    use crate::Scenario;

    fn flow(extra: &str) -> crate::config::FlowSpec {
        let text = format!(
            "name = \"r\"\nduration = \"1s\"\n[[links]]\nname = \"a\"\nrate = \"1Mbps\"\n\
             delay = \"1ms\"\n[[paths]]\nname = \"p\"\nlinks = [\"a\"]\n[[flows]]\nname = \"f\"\n\
             kind = \"mptcp\"\npaths = [\"p\"]\n{extra}\n"
        );
        Scenario::from_toml_str(&text, "<test>")
            .unwrap()
            .flows
            .remove(0)
    }

    #[test]
    fn reading_linux_sets_every_linux_default_and_written_fields_win() {
        let all = |f: &crate::config::FlowSpec| {
            (
                f.scheduler,
                f.send_buffer,
                f.recovery,
                f.slow_start_after_idle,
                f.delayed_ack,
                f.window_arithmetic,
                f.push_flag,
            )
        };
        let d = flow("");
        assert_eq!(
            all(&d),
            (
                Scheduler::MinRtt,
                SendBuffer::Unlimited,
                Recovery::Rfc6675,
                false,
                DelayedAck::Off,
                WindowArithmetic::Real,
                PushFlag::None
            )
        );
        assert_eq!(all(&flow("reading = \"default\"")), all(&d));
        let l = flow("reading = \"linux\"");
        assert_eq!(
            all(&l),
            (
                Scheduler::Linux,
                SendBuffer::Linux,
                Recovery::Linux,
                true,
                DelayedAck::Linux,
                WindowArithmetic::Linux,
                PushFlag::Linux
            )
        );
        let mixed = flow(
            "reading = \"linux\"\nscheduler = \"minrtt\"\nsend_buffer = \"unlimited\"\n\
             recovery = \"rfc6675\"\nslow_start_after_idle = false\ndelayed_ack = false\n\
             window_arithmetic = \"real\"",
        );
        assert_eq!(all(&mixed), all(&d));
        let one = flow("reading = \"linux\"\nscheduler = \"roundrobin\"\ndelayed_ack = true");
        assert_eq!(
            all(&one),
            (
                Scheduler::RoundRobin,
                SendBuffer::Linux,
                Recovery::Linux,
                true,
                DelayedAck::Every2,
                WindowArithmetic::Linux,
                PushFlag::None
            )
        );
        assert_eq!(
            flow("delayed_ack = \"linux\"").delayed_ack,
            DelayedAck::Linux
        );
        assert_eq!(
            flow("window_arithmetic = \"linux\"").window_arithmetic,
            WindowArithmetic::Linux
        );
    }
}
