//! Cost of one congestion-avoidance ACK for every algorithm on a 4-subflow connection
//! (`cargo bench -p pathpool-cc`). Plain std timing: prints ns per ACK, asserts nothing.

use std::hint::black_box;
use std::time::Instant;

use pathpool_cc::{build, catalog, Ack, Params, Subflow};

fn main() {
    const N: u32 = 2_000_000;
    let n = 4;
    for info in catalog() {
        let mut c = build(info.name, &Params::new(), n).unwrap();
        let mut sfs: Vec<Subflow> = (0..n)
            .map(|k| {
                let mut s = Subflow::new(1448);
                s.cwnd = 20.0 + 10.0 * k as f64;
                s.ssthresh = 2.0;
                s.srtt = (20 + 30 * k as u64) * 1_000_000;
                s.min_rtt = s.srtt;
                s.latest_rtt = s.srtt;
                s
            })
            .collect();
        let start = Instant::now();
        for j in 0..N {
            let i = (j % n as u32) as usize;
            let ack = Ack {
                acked_bytes: 1448,
                rtt_sample: None,
                one_way_delay: Some(10_000_000 + u64::from(j % 1000) * 1000),
                now: u64::from(j) * 10_000,
            };
            c.on_ack(black_box(&mut sfs), i, black_box(&ack));
            if j % 5000 == 4999 {
                c.on_congestion_event(&mut sfs, i, u64::from(j) * 10_000);
                let s = &mut sfs[i];
                s.cwnd = s.ssthresh;
            }
        }
        let ns = start.elapsed().as_nanos() as f64 / f64::from(N);
        println!("{:<12} {:>7.1} ns/ACK", info.name, ns);
    }
}
