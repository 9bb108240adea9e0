//! Subflow builders and checks shared by the integration tests.
#![allow(dead_code)]

use pathpool_cc::{Ack, Nanos, ParamValue, Params, Subflow};

pub const MSS: u32 = 1000;
pub const MS: Nanos = 1_000_000;

/// A subflow in congestion avoidance (`ssthresh` below the window) with the given window and
/// smoothed RTT in milliseconds (0 = no sample yet).
pub fn ca(cwnd: f64, srtt_ms: u64) -> Subflow {
    let mut s = Subflow::new(MSS);
    s.cwnd = cwnd;
    s.ssthresh = 1.0;
    s.srtt = srtt_ms * MS;
    s.min_rtt = srtt_ms * MS;
    s.latest_rtt = srtt_ms * MS;
    s
}

/// One full-sized ACK without RTT or delay samples.
pub fn ack(now: Nanos) -> Ack {
    Ack {
        acked_bytes: u64::from(MSS),
        rtt_sample: None,
        one_way_delay: None,
        now,
    }
}

/// One full-sized ACK carrying a one-way-delay sample (ms).
pub fn ack_owd(owd_ms: f64) -> Ack {
    Ack {
        acked_bytes: u64::from(MSS),
        rtt_sample: None,
        one_way_delay: Some((owd_ms * MS as f64).round() as Nanos),
        now: 0,
    }
}

pub fn params(list: &[(&str, ParamValue)]) -> Params {
    list.iter()
        .map(|(k, v)| (k.to_string(), v.clone()))
        .collect()
}

pub fn num(x: f64) -> ParamValue {
    ParamValue::Number(x)
}

/// `|a - b| <= 1e-12 max(1, |b|)`: equality up to floating-point rounding.
#[track_caller]
pub fn close(a: f64, b: f64) {
    assert!(
        (a - b).abs() <= 1e-12 * b.abs().max(1.0),
        "{a} != {b} (diff {})",
        a - b
    );
}

/// Equality to a tolerance, for hand arithmetic written with a few decimals.
#[track_caller]
pub fn near(a: f64, b: f64, tol: f64) {
    assert!((a - b).abs() <= tol, "{a} != {b} (tol {tol})");
}

/// What a transport does to a connection, for scripted and random event sequences.
#[derive(Clone, Debug)]
pub enum Event {
    /// New data acknowledged on subflow `i`, `dt_ms` after the previous event.
    Ack {
        i: usize,
        bytes: u64,
        rtt_ms: Option<u32>,
        owd_ms: Option<u32>,
        dt_ms: u32,
    },
    /// A loss detected by fast retransmit (a congestion event if not already in recovery).
    Loss { i: usize },
    /// A retransmission timeout.
    Rto { i: usize },
    /// The subflow closes or (re)opens.
    Toggle { i: usize },
}

/// A minimal transport obeying the event order of the crate README: it refreshes the RTT
/// estimates and counters, calls `on_recovery_exit` before the first ACK after recovery,
/// `on_congestion_event` once per recovery episode, and `on_rto`.
pub struct Harness {
    pub now: Nanos,
    pub subflows: Vec<Subflow>,
    pub cc: Box<dyn pathpool_cc::Controller>,
}

impl Harness {
    pub fn new(cc: Box<dyn pathpool_cc::Controller>, n: usize) -> Self {
        Harness {
            now: 0,
            subflows: (0..n).map(|_| Subflow::new(MSS)).collect(),
            cc,
        }
    }

    pub fn apply(&mut self, e: &Event) {
        match *e {
            Event::Ack {
                i,
                bytes,
                rtt_ms,
                owd_ms,
                dt_ms,
            } => {
                self.now += Nanos::from(dt_ms) * MS;
                if self.subflows[i].in_recovery {
                    self.subflows[i].in_recovery = false;
                    self.cc.on_recovery_exit(&mut self.subflows, i, self.now);
                }
                let sf = &mut self.subflows[i];
                let rtt = rtt_ms.map(|r| Nanos::from(r.max(1)) * MS);
                if let Some(r) = rtt {
                    sf.latest_rtt = r;
                    sf.min_rtt = if sf.min_rtt == 0 {
                        r
                    } else {
                        sf.min_rtt.min(r)
                    };
                    sf.srtt = if sf.srtt == 0 {
                        r
                    } else {
                        (7 * sf.srtt + r) / 8
                    };
                }
                sf.delivered += bytes.div_ceil(u64::from(MSS));
                let a = Ack {
                    acked_bytes: bytes,
                    rtt_sample: rtt,
                    one_way_delay: owd_ms.map(|o| Nanos::from(o) * MS),
                    now: self.now,
                };
                self.cc.on_ack(&mut self.subflows, i, &a);
            }
            Event::Loss { i } => {
                let sf = &mut self.subflows[i];
                sf.lost += 1;
                if !sf.in_recovery {
                    sf.loss_events += 1;
                    sf.in_recovery = true;
                    self.cc.on_congestion_event(&mut self.subflows, i, self.now);
                }
            }
            Event::Rto { i } => {
                let sf = &mut self.subflows[i];
                sf.lost += 1;
                sf.loss_events += 1;
                sf.in_recovery = false;
                self.cc.on_rto(&mut self.subflows, i, self.now);
            }
            Event::Toggle { i } => {
                let sf = &mut self.subflows[i];
                sf.active = !sf.active;
            }
        }
    }
}

/// A fixed pseudo-random script (xorshift, no external state) of ACKs, losses and RTOs on
/// subflow 0: slow start, congestion avoidance, recoveries, timeouts, varying RTTs, and a few
/// ACKs before the first RTT sample.
pub fn single_path_script(len: usize, seed: u64) -> Vec<Event> {
    let mut x = seed | 1;
    let mut next = move || {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x
    };
    let mut out = Vec::with_capacity(len);
    for k in 0..len {
        let r = next();
        let e = match r % 100 {
            0..=2 => Event::Loss { i: 0 },
            3 => Event::Rto { i: 0 },
            _ => Event::Ack {
                i: 0,
                bytes: [1000, 1000, 2000, 500, 3000][(r >> 8) as usize % 5],
                rtt_ms: (k >= 5).then_some(20 + (r >> 16) as u32 % 180),
                owd_ms: Some(10 + (r >> 24) as u32 % 90),
                dt_ms: (r >> 32) as u32 % 20,
            },
        };
        out.push(e);
    }
    out
}
