// The benchmark topology of pathpool's scenarios/bench/bench.toml, built with htsim's classes
// (Broadcom/csg-htsim, sim/): two bottlenecks (rate R, buffers of B packets, one-way delays 10 and
// 15 ms, ACKs back over a fixed delay equal to the forward one), N/3 MPTCP connections (LIA =
// htsim's COUPLED_INC) with a subflow over each, N/3 TCP flows on each bottleneck, starts uniform
// in the first second. This file is pathpool's, not htsim's; bench/htsim.sh compiles it against
// an htsim checkout. Prints the data packets sent (retransmissions included), as pathpool
// counts them.
//
// usage: htsim_bench N_FLOWS RATE_GBPS SECONDS BUFFER_PKTS
#include <cstdio>
#include <cstdlib>
#include <vector>

#include "clock.h"
#include "config.h"
#include "eventlist.h"
#include "mtcp.h"
#include "network.h"
#include "pipe.h"
#include "queue.h"
#include "route.h"
#include "tcp.h"

int main(int argc, char** argv) {
    if (argc != 5) {
        std::fprintf(stderr, "usage: %s N_FLOWS RATE_GBPS SECONDS BUFFER_PKTS\n", argv[0]);
        return 2;
    }
    int n = std::atoi(argv[1]);
    double gbps = std::atof(argv[2]);
    double secs = std::atof(argv[3]);
    int buffer = std::atoi(argv[4]);
    srand(1);

    EventList eventlist;
    eventlist.setEndtime(timeFromSec(secs));
    linkspeed_bps rate = (linkspeed_bps)(gbps * 1e9);
    simtime_picosec delay[2] = {timeFromMs(10), timeFromMs(15)};
    std::vector<Queue*> queues;
    std::vector<Pipe*> fwd, back;
    for (int p = 0; p < 2; p++) {
        queues.push_back(new Queue(rate, memFromPkt(buffer), eventlist, NULL));
        fwd.push_back(new Pipe(delay[p], eventlist));
        back.push_back(new Pipe(delay[p], eventlist));
    }
    TcpRtxTimerScanner scanner(timeFromMs(10), eventlist);
    std::vector<TcpSrc*> srcs;
    auto subflow = [&](int p) {
        TcpSrc* src = new TcpSrc(NULL, NULL, eventlist);
        TcpSink* snk = new TcpSink();
        scanner.registerTcp(*src);
        route_t* out = new route_t();
        out->push_back(queues[p]);
        out->push_back(fwd[p]);
        out->push_back(snk);
        route_t* in = new route_t();
        in->push_back(back[p]);
        in->push_back(src);
        srcs.push_back(src);
        return std::make_pair(src, std::make_pair(snk, std::make_pair(out, in)));
    };
    int per = n / 3;
    for (int i = 0; i < per; i++) {
        MultipathTcpSrc* m = new MultipathTcpSrc(COUPLED_INC, eventlist, NULL);
        MultipathTcpSink* ms = new MultipathTcpSink(eventlist);
        for (int p = 0; p < 2; p++) {
            auto s = subflow(p);
            m->addSubflow(s.first);
            ms->addSubflow(s.second.first);
            s.first->connect(*s.second.second.first, *s.second.second.second, *s.second.first,
                             timeFromMs(drand() * 1000));
        }
        m->connect(ms);
    }
    for (int p = 0; p < 2; p++) {
        for (int i = 0; i < per; i++) {
            auto s = subflow(p);
            s.first->connect(*s.second.second.first, *s.second.second.second, *s.second.first,
                             timeFromMs(drand() * 1000));
        }
    }
    while (eventlist.doNextEvent()) {
    }
    uint64_t bytes = 0;
    for (TcpSrc* s : srcs) bytes += s->_packets_sent;
    std::printf("data_packets %llu\n", (unsigned long long)(bytes / srcs[0]->_mss));
    return 0;
}
