//! The scenario format as data: every table and field with its type, units, default, allowed
//! values and a one-line description, in file order.
//!
//! This is the one machine-readable description of the format. The validator takes its
//! "allowed" texts from the constants in [`allowed`] (so an error message and the reference
//! cannot say different things), the field tables of `SCENARIOS.md` and the documentation site
//! are generated from [`FIELDS`] (Python: `pathpool.scenario_schema()`), and the tests below
//! check that the validator accepts every field at the `accept` values and refuses the `refuse`
//! values (just past each bound) naming the field and exactly these allowed texts, and that
//! every field serde accepts is listed here.

/// The "allowed" part of the validator's messages, one per bounded field.
pub mod allowed {
    pub const NAME: &str =
        "1 to 128 of A-Z a-z 0-9 . _ -, not starting with '.' (it names output files)";
    pub const DURATION: &str =
        "a time > 0 and at most 10^6 s, e.g. \"30s\", \"500ms\", or seconds as a number; long enough for each link to send one packet";
    pub const SEEDS: &str = "1 to 100000 distinct integers from 0 to 2^64-1";
    pub const METRICS_INTERVAL: &str = "0 (no time series) or a time from 1 us to 10^6 s";
    pub const LINK_RATE: &str =
        "a rate from 1 bit/s to 1 Tbit/s, e.g. \"10Mbps\", \"1Gbps\", or bits/s as a number; enough to send one packet in the run";
    pub const LINK_DELAY: &str = "a time from 0 to 1000 s, e.g. \"20ms\"";
    pub const BUFFER: &str = "a packet count from 1 to 10^6 (100 or \"100pkt\") or a size from one packet (mss + 52 B) to 1.5 GB (\"64KB\", \"1MiB\")";
    pub const LOSS: &str = "a probability in [0, 1], e.g. 0.01 or \"1%\"";
    pub const GILBERT: &str = "a probability in [0, 1]";
    pub const REORDER_PROBABILITY: &str = "a probability in [0, 1], e.g. 0.05 or \"5%\"";
    pub const REORDER_DELAY: &str = "a time > 0 and at most 1000 s, e.g. \"5ms\"";
    pub const ACK_DELAY: &str = "a time from 0 to 1000 s";
    pub const KIND: &str = "tcp, mptcp, rate";
    pub const SCHEDULER: &str = "minrtt, roundrobin, linux";
    pub const SEND_BUFFER: &str = "unlimited, linux";
    pub const WRITER: &str = "blocking, poll";
    pub const JOINS: &str = "together, linux, linux_peer_first";
    pub const SEGMENTATION: &str = "whole, linux";
    pub const RECEIVE_WINDOW: &str = "fixed, linux";
    pub const WRITE_SIZE: &str = "a size from 1 byte to 64 MiB, e.g. \"64KiB\"";
    pub const READING: &str = "default, linux";
    pub const RECOVERY: &str = "rfc6675, linux";
    pub const WINDOW_ARITHMETIC: &str = "real, linux";
    pub const PUSH_FLAG: &str = "none, linux";
    pub const DELAYED_ACK: &str = "true, false, \"linux\"";
    pub const APP: &str = "bulk, file";
    pub const SIZE: &str =
        "a size from 1 byte to 10^12 bytes, e.g. \"4MB\", \"10MiB\", or bytes as a number";
    pub const START: &str = "a time from 0 to 10^6 s";
    pub const STOP: &str = "a time > start, at most 10^6 s";
    pub const START_JITTER: &str = "a time from 0 to 1000 s";
    pub const SEND_JITTER: &str = "a time from 0 (none) to 1000 s";
    pub const COUNT: &str = "an integer in 1..=100000";
    pub const MSS: &str = "payload bytes in 64..=9000";
    pub const OPTION_BYTES: &str =
        "bytes in 0..=28 (TCP option space beyond the timestamps), at most mss - 64";
    pub const RCV_BUFFER: &str = "a size from 2 * mss to 1 GiB, e.g. \"4MiB\"";
    pub const RATES: &str =
        "a list of packets/s from 0 to 10^9, one per path, not all 0, e.g. [100, 50]";
    pub const BLOCK_LENGTH: &str = "an integer in 1..=65535";
    pub const SOURCE_PER_BLOCK: &str = "an integer in 1..=block_length";
    pub const DEADLINE: &str = "a time > 0 and at most 1000 s, e.g. \"300ms\"";
    pub const FEEDBACK_INTERVAL: &str = "a time from 1 ms to 10^6 s, e.g. \"1s\"";
}

/// One field of a scenario table.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Field {
    /// The table: `""` (top level), `metrics`, `links`, `links.gilbert`, `links.reorder`,
    /// `paths` or `flows`.
    pub table: &'static str,
    pub name: &'static str,
    /// `string`, `integer`, `boolean`, `time`, `rate`, `size`, `probability`, `buffer`,
    /// `table`, `array of tables`, `list of strings`, `list of integers` or `list of numbers`; the units each
    /// quantity type takes are [`UNITS`].
    pub kind: &'static str,
    /// `yes`, `no`, or the flows that need it (`tcp`, `mptcp, rate`, `app = "file"`).
    pub required: &'static str,
    /// The value an omitted field takes, as written in a file (empty: none).
    pub default: &'static str,
    /// Allowed values or range in words: the validator's own text where it has one.
    pub allowed: &'static str,
    /// Flow kinds the field applies to (`flows` only; empty elsewhere).
    pub kinds: &'static str,
    pub doc: &'static str,
    /// Values (TOML) the validator accepts: the bounds, for bounded fields.
    pub accept: &'static [&'static str],
    /// Values (TOML) it refuses with `allowed` as its allowed text: just past each bound.
    pub refuse: &'static [&'static str],
}

/// A quantity type's units: suffixes matched exactly (case included), and what a plain number
/// means.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Units {
    pub kind: &'static str,
    pub suffixes: &'static [&'static str],
    pub plain: &'static str,
}

/// The suffixes `crate::units` reads (a test below checks each one parses).
pub const UNITS: &[Units] = &[
    Units {
        kind: "time",
        suffixes: &["ns", "us", "µs", "ms", "s", "min"],
        plain: "seconds",
    },
    Units {
        kind: "rate",
        suffixes: &[
            "bps", "kbps", "Kbps", "Mbps", "Gbps", "Tbps", "bit/s", "kbit/s", "Mbit/s", "Gbit/s",
            "Tbit/s",
        ],
        plain: "bits/s",
    },
    Units {
        kind: "size",
        suffixes: &["B", "KB", "kB", "MB", "GB", "KiB", "MiB", "GiB"],
        plain: "bytes",
    },
    Units {
        kind: "probability",
        suffixes: &["%"],
        plain: "fraction",
    },
    Units {
        kind: "buffer",
        suffixes: &[
            "p", "pkt", "pkts", "packet", "packets", "B", "KB", "kB", "MB", "GB", "KiB", "MiB",
            "GiB",
        ],
        plain: "packets",
    },
];

/// The tables in file order: name, how it is written, one line on what it is.
pub const TABLES: &[(&str, &str, &str)] = &[
    ("", "top level", "the scenario: name, run time, seeds"),
    ("metrics", "[metrics]", "which time series to record"),
    ("links", "[[links]]", "one direction of a link"),
    (
        "links.gilbert",
        "gilbert = { ... } in [[links]]",
        "Gilbert-Elliott bursty loss (netem `gemodel` style)",
    ),
    (
        "links.reorder",
        "reorder = { ... } in [[links]]",
        "reordering on a link",
    ),
    ("paths", "[[paths]]", "a route over links"),
    (
        "flows",
        "[[flows]]",
        "a connection (tcp, mptcp) or a paced multipath sender (rate)",
    ),
];

const ALL: &str = "tcp, mptcp, rate";
const WIN: &str = "tcp, mptcp";
const RATE: &str = "rate";

macro_rules! field {
    ($t:expr, $n:expr, $k:expr, $req:expr, $def:expr, $al:expr, $kinds:expr, $doc:expr) => {
        field!($t, $n, $k, $req, $def, $al, $kinds, $doc, [], [])
    };
    ($t:expr, $n:expr, $k:expr, $req:expr, $def:expr, $al:expr, $kinds:expr, $doc:expr,
     [$($a:expr),*], [$($r:expr),*]) => {
        Field {
            table: $t,
            name: $n,
            kind: $k,
            required: $req,
            default: $def,
            allowed: $al,
            kinds: $kinds,
            doc: $doc,
            accept: &[$($a),*],
            refuse: &[$($r),*],
        }
    };
}

use allowed as a;

/// Every field of the format, in file order.
pub const FIELDS: &[Field] = &[
    field!("", "name", "string", "yes", "", a::NAME, "",
        "scenario name; it names output directories and files",
        ["\"a\"", "\"x.y_z-1\""], ["\"\"", "\".hidden\"", "\"a/b\""]),
    field!("", "description", "string", "no", "\"\"", "any text", "", "free text"),
    field!("", "duration", "time", "yes", "", a::DURATION, "", "simulated time",
        // 1.2 ms: the test scenario's 10 Mbit/s links send a 1500-byte packet in that time.
        ["\"1.2ms\"", "\"1000000s\""], ["0", "\"1000000.001s\""]),
    field!("", "seeds", "list of integers", "no", "[1]", a::SEEDS, "",
        "run seeds; each seed is one run",
        ["[0]", "[9223372036854775807]"], ["[]", "[1, 1]", "[-1]"]),
    field!("", "metrics", "table", "no", "", "[metrics]", "", "time series, see `[metrics]`"),
    field!("", "links", "array of tables", "yes", "", "[[links]], at most 10000", "",
        "one table per link (one direction)"),
    field!("", "paths", "array of tables", "yes", "", "[[paths]]", "", "one table per path"),
    field!("", "flows", "array of tables", "yes", "", "[[flows]], at least one; at most 100000 after `count`",
        "", "one table per flow"),
    field!("metrics", "interval", "time", "no", "0", a::METRICS_INTERVAL, "",
        "sampling interval of the time series (samples at interval, 2 interval, ...); 0 = none",
        ["0", "\"1us\"", "\"1000000s\""], ["\"999ns\"", "\"1000000.001s\"", "\"-1ns\""]),
    field!("links", "name", "string", "yes", "", "a name unique among links", "",
        "link name, referred to by paths"),
    field!("links", "rate", "rate", "yes", "", a::LINK_RATE, "", "transmission rate",
        ["1", "\"1Tbps\""], ["0.99", "\"1.001Tbps\""]),
    field!("links", "delay", "time", "no", "0", a::LINK_DELAY, "", "propagation delay",
        ["0", "\"1000s\""], ["\"-1ns\"", "\"1000.001s\""]),
    field!("links", "buffer", "buffer", "no", "100", a::BUFFER, "",
        "drop-tail buffer; holds the packet being transmitted plus those waiting",
        ["1", "\"1000000pkt\"", "\"1500B\"", "\"1.5GB\""], ["0", "1000001", "\"0B\"", "\"1500000001B\"", "1.5"]),
    field!("links", "loss", "probability", "no", "0", a::LOSS, "",
        "Bernoulli loss applied on arrival, before the queue (as Linux netem does)",
        ["0", "1", "\"100%\""], ["-0.001", "1.001", "\"101%\""]),
    field!("links", "gilbert", "table", "no", "", "{ p, r, loss_good, loss_bad }", "",
        "Gilbert-Elliott bursty loss, applied as well as `loss`"),
    field!("links", "reorder", "table", "no", "", "{ probability, extra_delay }", "",
        "reordering; not allowed on links a rate flow crosses"),
    field!("links.gilbert", "p", "probability", "yes", "", a::GILBERT, "",
        "P(good -> bad) per packet", ["0", "1"], ["-0.001", "1.001"]),
    field!("links.gilbert", "r", "probability", "yes", "", a::GILBERT, "",
        "P(bad -> good) per packet; a stay in the bad state lasts 1/r packets on average",
        ["0", "1"], ["-0.001", "1.001"]),
    field!("links.gilbert", "loss_good", "probability", "no", "0", a::GILBERT, "",
        "loss probability in the good state", ["0", "1"], ["-0.001", "1.001"]),
    field!("links.gilbert", "loss_bad", "probability", "no", "1", a::GILBERT, "",
        "loss probability in the bad state", ["0", "1"], ["-0.001", "1.001"]),
    field!("links.reorder", "probability", "probability", "yes", "", a::REORDER_PROBABILITY, "",
        "share of the packets the link accepts that are delayed by extra_delay",
        ["0", "1"], ["-0.001", "1.001"]),
    field!("links.reorder", "extra_delay", "time", "yes", "", a::REORDER_DELAY, "",
        "added to the propagation delay of a chosen packet, so packets behind it overtake it",
        ["\"1ns\"", "\"1000s\""], ["0", "\"1000.001s\""]),
    field!("paths", "name", "string", "yes", "", "a name unique among paths", "",
        "path name, referred to by flows"),
    field!("paths", "links", "list of strings", "yes", "", "link names, at least one", "",
        "links from sender to receiver (data direction)"),
    field!("paths", "ack_links", "list of strings", "no", "", "link names, at least one", "",
        "links the ACKs cross, in order (they share those links' queues and loss)"),
    field!("paths", "ack_delay", "time", "no", "sum of the links' delays", a::ACK_DELAY, "",
        "ACKs return over an uncongested fixed-delay path (give ack_links or ack_delay)",
        ["0", "\"1000s\""], ["\"-1ns\"", "\"1000.001s\""]),
    field!("flows", "name", "string", "yes", "", "a name unique among flows", ALL,
        "flow name; with count = n the flows are NAME-0 .. NAME-(n-1)"),
    field!("flows", "kind", "string", "yes", "", a::KIND, ALL,
        "tcp: one subflow; mptcp: one subflow per path; rate: a paced multipath sender",
        [], ["\"udp\""]),
    field!("flows", "path", "string", "tcp", "", "a path name", ALL,
        "the path of a single-path flow (or paths = [\"p\"])"),
    field!("flows", "paths", "list of strings", "mptcp, rate", "", "1 to 255 path names", ALL,
        "one subflow per entry"),
    field!("flows", "algorithm", "string", "no", "reno", "names of `pathpool algorithms`", WIN,
        "congestion control"),
    field!("flows", "params", "table", "no", "{}", "per algorithm (`pathpool algorithms`)", WIN,
        "algorithm parameters, e.g. { a = 1.0 } for ewtcp"),
    field!("flows", "counting", "string", "no", "bytes", "bytes, acks", WIN,
        "congestion avoidance per acknowledged segment (RFC 6356) or one step per ACK (Linux MPTCP v0.95)",
        [], ["\"segments\""]),
    field!("flows", "scheduler", "string", "no", "minrtt", a::SCHEDULER, WIN,
        "MPTCP scheduler: minrtt = lowest smoothed RTT with room in cwnd, one segment at a time (the out-of-tree Linux MPTCP v0.9x default, what the papers' kernels ran); roundrobin; linux = upstream Linux's default (6.18 mptcp_subflow_get_send): lowest linger time (queued bytes over pacing rate), bursts of up to 65,428 bytes queued on that subflow until its window lets them out, only a connection-level timeout re-sends elsewhere",
        [], ["\"random\""]),
    field!("flows", "reading", "string", "no", "default", a::READING, WIN,
        "linux: what upstream Linux (6.18) does, as the defaults of scheduler (linux), send_buffer (linux), recovery (linux), slow_start_after_idle (true), delayed_ack (linux), joins (linux), segmentation (linux), receive_window (linux), window_arithmetic (linux) and push_flag (linux); a field written beside it still wins. default: the fields' own defaults",
        ["\"linux\""], ["\"kernel\""]),
    field!("flows", "send_buffer", "string", "no", "unlimited", a::SEND_BUFFER, WIN,
        "unlimited = the application always has data and nothing bounds what is queued; linux = Linux's send buffers: each subflow's grows as tcp_sndbuf_expand says (2 x max(10, cwnd) segments of 2,304 bytes at a 1,448-byte MSS, as the test bed's kernel charges them, at most 4 MiB), never shrinks; an MPTCP connection's is 4,096 plus its subflows'; freed on (DATA_)ACK; the writer blocks when full and wakes with a third free; with scheduler = linux a subflow with a full buffer takes no more",
        [], ["\"auto\""]),
    field!("flows", "writer", "string", "no", "blocking", a::WRITER, WIN,
        "how the application writes (with send_buffer = \"linux\"): blocking = blocking send() calls (Linux's sk_stream_wait_memory): fills the buffer, then waits until the free space is at least half of what is queued; poll = a non-blocking writer driven by select/poll/epoll, as iperf3 and the test bed's sender: one send() of write_size bytes each time the socket polls writable (sk_stream_is_writeable: free space at least half of what is queued), each call's data handed to the subflows before the next (mptcp_sendmsg ends in __mptcp_push_pending), so the queued data stays near two thirds of the buffer",
        ["\"poll\""], ["\"async\""]),
    field!("flows", "write_size", "size", "no", "\"64KiB\"", a::WRITE_SIZE, WIN,
        "writer = \"poll\": bytes per send() call (the test bed's sender writes 64 KiB, 8 KiB for a flow with a stop time)",
        ["1", "\"64MiB\""], ["0", "67108865"]),
    field!("flows", "joins", "string", "no", "together", a::JOINS, WIN,
        "when an MPTCP connection's further subflows start: together = all with the first; linux = as Linux 6.18's in-kernel path manager and MP_JOIN (measured on the test bed): once the first subflow gets its first ACK back, each further subflow carries data, and adds its send buffer to the connection's, two round trips of its own path later (SYN and SYN/ACK, then ACK and the fourth ACK; propagation delays only); linux_peer_first = the same for an application whose peer sends first, as the test bed's receiver does (one byte before the sender writes): the connection is fully established when the application starts, so the joins begin then",
        ["\"linux\""], ["\"later\""]),
    field!("flows", "segmentation", "string", "no", "whole", a::SEGMENTATION, WIN,
        "how the byte stream is cut into segments: whole = every segment full but a file's last (a write's unfinished segment waits for the next write); linux = as Linux 6.18 (needs scheduler = \"linux\"): what a subflow takes ends where the written data ends, so each write's tail goes out short unless the next write reaches the same subflow while that tail is unsent, and a short tail waits while an earlier short segment of its subflow is unacknowledged (Nagle, Minshall's check); a subflow's burst ends after a whole data fragment of the writer's 32 KB pages; a TCP flow is cut only where the written data ends",
        ["\"linux\""], ["\"bytes\""]),
    field!("flows", "receive_window", "string", "no", "fixed", a::RECEIVE_WINDOW, WIN,
        "the connection-level receive window: fixed = rcv_buffer bytes from data_ack at all times; linux = as Linux 6.18 autotunes it (mptcp_rcv_space_adjust, tcp_rcv_space_adjust): the buffer starts at 128 KiB (tcp_rmem[1]) and, once per round trip (the largest of the subflows' receive-side estimates), grows to hold twice what the application read in that round trip plus room to double it, up to rcv_buffer (tcp_rmem[2]; default 32 MiB with linux); the window offered is half the buffer less the payload held out of order, at most the ACKing subflow's rcv_ssthresh (which grows by two segments per segment it receives in order: tcp_grow_window), and its edge never moves back",
        ["\"linux\""], ["\"auto\""]),
    field!("flows", "app", "string", "no", "bulk", a::APP, ALL,
        "bulk: always has data from start to stop; file: size bytes, completion time recorded",
        [], ["\"video\""]),
    field!("flows", "size", "size", "app = \"file\"", "", a::SIZE, WIN, "file size",
        ["1", "\"1000GB\""], ["0", "1000000000001"]),
    field!("flows", "start", "time", "no", "0", a::START, ALL, "when the application starts",
        ["0", "\"1000000s\""], ["\"-1ns\"", "\"1000000.001s\""]),
    field!("flows", "stop", "time", "no", "end of run", a::STOP, ALL,
        "bulk: stop offering new data (what was sent is still delivered)",
        ["\"1ns\"", "\"1000000s\""], ["0", "\"1000000.001s\""]),
    field!("flows", "start_jitter", "time", "no", "0", a::START_JITTER, ALL,
        "start is drawn uniformly in [start, start + start_jitter] from the flow's random stream",
        ["0", "\"1000s\""], ["\"-1ns\"", "\"1000.001s\""]),
    field!("flows", "send_jitter", "time", "no", "\"0.5ms\"", a::SEND_JITTER, ALL,
        "each data packet leaves the host after a random delay in [0, send_jitter], in order (ns-2's overhead_)",
        ["0", "\"1000s\""], ["\"-1ns\"", "\"1000.001s\""]),
    field!("flows", "count", "integer", "no", "1", a::COUNT, ALL,
        "that many identical flows, named NAME-0 .. NAME-(n-1); at most 100000 flows in all",
        // 99999: the test scenario has one other flow, and 100000 flows in all is the limit.
        ["1", "99999"], ["0", "100001"]),
    field!("flows", "mss", "size", "no", "1448", a::MSS, ALL, "payload bytes per segment with the timestamp option only (Linux mss_cache); option_bytes come off it",
        ["64", "9000"], ["63", "9001"]),
    field!("flows", "option_bytes", "size", "no", "0", a::OPTION_BYTES, WIN,
        "TCP option bytes each data segment carries beyond the timestamps (Linux MPTCP's DSS: 24): a segment carries mss - option_bytes payload bytes and is mss + 52 bytes on the wire at full size",
        ["0", "\"28B\""], ["\"-1B\"", "29"]),
    field!("flows", "rcv_buffer", "size", "no", "\"4MiB\"", a::RCV_BUFFER, WIN,
        "connection-level receive buffer; receive_window = fixed: the sender never sends beyond data_ack + rcv_buffer; linux: the largest the autotuned buffer grows to (tcp_rmem[2]; the window is half of it); default 4 MiB (fixed), 32 MiB (linux)",
        ["2896", "\"1GiB\""], ["2895", "1073741825"]),
    field!("flows", "delayed_ack", "boolean or string", "no", "false", a::DELAYED_ACK, WIN,
        "false = an ACK per segment; true = an ACK per second in-order segment or after 40 ms, out-of-order data at once; linux = Linux's receiver (6.18 tcp_input.c): quick ACKs for the first min(16, window / 2 segments) segments and again after a gap longer than the RTO or a duplicate, then an ACK once more than one full segment is unACKed, else after the ACK timeout ato (40 ms, adapted to the inter-arrival time, doubled when the timer fires, at most 200 ms); out-of-order and hole-filling data at once; a short segment's ACK when the application's read empties the receive queue (tcp_cleanup_rbuf; for MPTCP every subflow's, mptcp_cleanup_rbuf)",
        ["\"linux\"", "true"], ["\"yes\"", "1"]),
    field!("flows", "slow_start_after_idle", "boolean", "no", "false", "true, false", WIN,
        "Linux's restart after idle (sysctl tcp_slow_start_after_idle, on by default in Linux; 6.18 tcp_cwnd_restart): new data for a (sub)flow with nothing in flight and no data sent for longer than its RTO raises ssthresh to at least 3/4 cwnd and halves cwnd per further RTO of idle, not below min(10, cwnd)"),
    field!("flows", "recovery", "string", "no", "rfc6675", a::RECOVERY, WIN,
        "loss detection and recovery: rfc6675 = SACK recovery, DupThresh 3, no tail loss probe; linux = RACK-TLP (RFC 8985) and PRR (RFC 6937) as Linux >= 4.18 (see Loss recovery)",
        ["\"linux\""], ["\"newreno\""]),
    field!("flows", "window_arithmetic", "string", "no", "real", a::WINDOW_ARITHMETIC, WIN,
        "what a window reduction leaves: real = the algorithm's real-valued result, a fraction of a segment included (the papers' rules); linux = whole segments, as Linux 6.18 keeps them: ssthresh cut to whole segments (ca_ops->ssthresh returns a u32), the progress towards the next segment dropped (tcp_init_cwnd_reduction, tcp_enter_loss zero snd_cwnd_cnt), and recovery ends at that ssthresh; growth between reductions is the same in both",
        ["\"linux\""], ["\"integer\""]),
    field!("flows", "push_flag", "string", "no", "none", a::PUSH_FLAG, WIN,
        "which data segments carry PSH, which the receiver's delayed_ack = \"linux\" reads: none = no segment (only a short one counts as pushed); linux = as Linux 6.18 sends: the new segments of one sending pass leave in GSO packets of tcp_tso_segs segments (about 1 ms of the pacing rate, at least 2) and every packet of more than one segment carries PSH on its last (__tcp_transmit_skb); a full segment with PSH marks the receiver's pending ACK pushed, which the application's read that empties the receive queue sends at once (tcp_cleanup_rbuf; for MPTCP the connection's queue, mptcp_cleanup_rbuf). Needs scheduler = \"linux\" (or reading = \"linux\")",
        ["\"linux\""], ["\"psh\""]),
    field!("flows", "rates", "list of numbers", "rate", "", a::RATES, RATE,
        "initial sending rate of each path, packets/s",
        ["[0.5]", "[1000000000]"], ["[0]", "[1000000001]", "[-1]", "[1, 2]"]),
    field!("flows", "block_length", "integer", "no", "10", a::BLOCK_LENGTH, RATE,
        "FEC block length n (packets)", ["1", "65535"], ["0", "65536"]),
    field!("flows", "source_per_block", "integer", "no", "ceil(block_length / 2)",
        a::SOURCE_PER_BLOCK, RATE,
        "source packets k per block until a controller sets another (the rest repair a systematic MDS code)",
        ["1", "10"], ["0", "11"]),
    field!("flows", "deadline", "time", "no", "\"300ms\"", a::DEADLINE, RATE,
        "a packet whose one-way delay exceeds it is late",
        ["\"1ns\"", "\"1000s\""], ["0", "\"1000.001s\""]),
    field!("flows", "feedback_interval", "time", "no", "\"1s\"", a::FEEDBACK_INTERVAL, RATE,
        "the receiver reports every this often from the flow's start",
        ["\"1ms\"", "\"1000000s\""], ["\"999us\"", "\"1000000.001s\""]),
    field!("flows", "controller", "string", "no", "fixed", "the caller's labels (Python: fixed, mptcp, optimised)",
        RATE, "which external rate controller is meant to drive the flow (a label)"),
];

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::{Options, Scenario};

    /// A scenario with every table present and a rate flow at `flows[1]`, whose path crosses
    /// no reordering link.
    const BASE: &str = r#"
name = "base"
duration = 10
[[links]]
name = "l"
rate = "10Mbps"
[[links]]
name = "m"
rate = "10Mbps"
[[paths]]
name = "p"
links = ["l"]
[[paths]]
name = "q"
links = ["m"]
[[flows]]
name = "f"
kind = "tcp"
path = "p"
[[flows]]
name = "r"
kind = "rate"
paths = ["q"]
rates = [100]
"#;

    /// Overrides that make `field` exist, and the dotted key and error path of the field.
    fn locate(f: &Field) -> (Vec<String>, String, String) {
        let rate = f.kinds == RATE;
        match f.table {
            "" => (vec![], f.name.into(), f.name.into()),
            "metrics" => (
                vec![],
                format!("metrics.{}", f.name),
                format!("metrics.{}", f.name),
            ),
            // 1 bit/s sends a 1500-byte packet in 12000 s: the run must be that long.
            "links" if f.name == "rate" => (
                vec!["duration=12000".into()],
                format!("links.0.{}", f.name),
                format!("links[0].{}", f.name),
            ),
            "links" => (
                vec![],
                format!("links.0.{}", f.name),
                format!("links[0].{}", f.name),
            ),
            "links.gilbert" => (
                vec!["links.0.gilbert={ p = 0.1, r = 0.5 }".into()],
                format!("links.0.gilbert.{}", f.name),
                format!("links[0].gilbert.{}", f.name),
            ),
            "links.reorder" => (
                vec!["links.0.reorder={ probability = 0.1, extra_delay = \"1ms\" }".into()],
                format!("links.0.reorder.{}", f.name),
                format!("links[0].reorder.{}", f.name),
            ),
            "paths" => (
                vec![],
                format!("paths.0.{}", f.name),
                format!("paths[0].{}", f.name),
            ),
            "flows" => {
                let (i, mut pre) = if rate { (1, vec![]) } else { (0, vec![]) };
                if f.name == "size" {
                    pre.push("flows.0.app=\"file\"".into());
                }
                if f.name == "writer" || f.name == "write_size" {
                    pre.push("flows.0.send_buffer=\"linux\"".into());
                }
                if f.name == "write_size" {
                    pre.push("flows.0.writer=\"poll\"".into());
                }
                if f.name == "segmentation" || f.name == "push_flag" {
                    pre.push("flows.0.scheduler=\"linux\"".into());
                }
                (
                    pre,
                    format!("flows.{i}.{}", f.name),
                    format!("flows[{i}].{}", f.name),
                )
            }
            t => panic!("unknown table {t}"),
        }
    }

    fn load(overrides: Vec<String>) -> Result<Scenario, crate::config::ConfigError> {
        let options = Options {
            overrides,
            ..Options::default()
        };
        Scenario::from_toml_str_with(BASE, "base.toml", &options)
    }

    #[test]
    fn validator_accepts_the_bounds_and_refuses_past_them_with_the_documented_text() {
        load(vec![]).expect("the base scenario is valid");
        let (mut checked, mut wrong) = (0, Vec::new());
        for f in FIELDS {
            let (pre, key, path) = locate(f);
            for v in f.accept {
                let mut o = pre.clone();
                o.push(format!("{key}={v}"));
                if let Err(e) = load(o) {
                    wrong.push(format!("{path} = {v} refused: {e}"));
                }
                checked += 1;
            }
            for v in f.refuse {
                let mut o = pre.clone();
                o.push(format!("{key}={v}"));
                checked += 1;
                let Err(e) = load(o) else {
                    wrong.push(format!("{path} = {v} accepted"));
                    continue;
                };
                let named = e.field == path || e.field.starts_with(&format!("{path}["));
                if !named || e.allowed.as_deref() != Some(f.allowed) {
                    wrong.push(format!("{path} = {v}: {e}"));
                }
            }
        }
        assert!(wrong.is_empty(), "{}", wrong.join("\n"));
        assert!(checked > 100, "only {checked} values checked");
    }

    /// serde's own list of the fields of `table` (from the error for an unknown one).
    fn accepted_fields(table: &str) -> Vec<String> {
        let (pre, key) = match table {
            "" => (vec![], "zz_unknown".to_string()),
            "metrics" => (vec![], "metrics.zz_unknown".into()),
            "links.gilbert" => (
                vec!["links.0.gilbert={ p = 0.1, r = 0.5 }".to_string()],
                "links.0.gilbert.zz_unknown".into(),
            ),
            "links.reorder" => (
                vec!["links.0.reorder={ probability = 0.1, extra_delay = \"1ms\" }".to_string()],
                "links.0.reorder.zz_unknown".into(),
            ),
            t => (vec![], format!("{t}.0.zz_unknown")),
        };
        let mut o = pre;
        o.push(format!("{key}=1"));
        let e = load(o).expect_err("an unknown field is refused");
        assert!(e.message.contains("unknown field"), "{e}");
        let mut v: Vec<String> = e
            .allowed
            .expect("serde lists the fields")
            .split(", ")
            .flat_map(|s| s.split(" or "))
            .map(str::to_string)
            .collect();
        v.sort();
        v
    }

    #[test]
    fn every_field_the_validator_accepts_is_documented_and_no_other() {
        for (table, _, _) in TABLES {
            let mut documented: Vec<String> = FIELDS
                .iter()
                .filter(|f| f.table == *table)
                .map(|f| f.name.to_string())
                .collect();
            documented.sort();
            assert_eq!(accepted_fields(table), documented, "table {table:?}");
        }
        for f in FIELDS {
            assert!(TABLES.iter().any(|t| t.0 == f.table), "{f:?}");
            let k = [
                "string",
                "integer",
                "boolean",
                // delayed_ack: true, false or "linux".
                "boolean or string",
                "time",
                "rate",
                "size",
                "probability",
                "buffer",
                "table",
                "array of tables",
                "list of strings",
                "list of integers",
                "list of numbers",
            ];
            assert!(
                k.contains(&f.kind),
                "{}.{}: kind {}",
                f.table,
                f.name,
                f.kind
            );
        }
    }

    #[test]
    fn a_seed_above_i64_in_a_rendered_scenario_names_its_field() {
        // Read as is, the file may hold any u64 seed; rendered anew after an override, TOML's
        // i64 values cannot: the error names the field (it was a bare "u64 value was too large").
        let e = load(vec!["seeds=[18446744073709551615]".into()]).unwrap_err();
        assert_eq!(e.field, "seeds[0]", "{e}");
        assert!(e.message.contains("2^63-1"), "{e}");
        let text = BASE.replace(
            "duration = 10",
            "duration = 10\nseeds = [18446744073709551615]",
        );
        let sc = Scenario::from_toml_str(&text, "big.toml").unwrap();
        assert_eq!(sc.seeds, [u64::MAX]);
    }

    #[test]
    fn every_documented_unit_parses() {
        use crate::units;
        for u in UNITS {
            for s in u.suffixes {
                let text = format!("1{s}");
                let ok = match u.kind {
                    "time" => units::seconds(&text).is_ok(),
                    "rate" => units::rate_bps(&text).is_ok(),
                    "size" => units::bytes(&text).is_ok(),
                    "probability" => units::fraction(&text).is_ok(),
                    "buffer" => super::super::check::buffer(&super::super::raw::Quantity::Text(
                        text.clone(),
                    ))
                    .is_ok(),
                    k => panic!("{k}"),
                };
                assert!(ok, "{} {text}", u.kind);
            }
        }
    }
}
