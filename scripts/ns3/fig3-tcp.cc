// ns-3 twin of ka-sim's `crates/ka-sim/scenarios/fig3-tcp.toml` (the paper's
// Fig. 3, TCP only), for `scripts/ns3-crosscheck.sh`. Built against the
// ns-3.44 PyPI wheel (`pip install ns3`), which ships the headers and shared
// libraries; no ns-3 build tree is needed.
//
// Dumbbell: every host on its own 1 Gbit/s, 0 ms access link; one
// 150 Mbit/s, 50 ms bottleneck each way with a 1000-packet drop-tail queue
// (no queue disc); RTT 100 ms. `--senders` on-off senders, each with its own
// receiver: off time Exp(mean 0.5 s), then one TCP connection that sends a
// bounded-Pareto number of full packets (1..2000, mean 100, shape 1.8; the
// same distribution as crates/ka-sim/src/rng.rs) and closes; the next off
// time starts when data and FIN are acknowledged. A flow's completion time
// runs from the connect call to the moment the receiving application has
// read the last byte (ka-sim's FCT).
//
// TCP: ns-3.44's TcpNewReno with the paper profile's settings (see
// docs/RESULTS.md, "Paper TCP vs ns-3"). Writes flows.csv with ka-sim's
// column names for the columns it has.

#include "ns3/core-module.h"
#include "ns3/internet-module.h"
#include "ns3/network-module.h"
#include "ns3/point-to-point-module.h"
#include "ns3/traffic-control-module.h"

#include <cmath>
#include <cstdint>
#include <fstream>
#include <iomanip>
#include <iostream>
#include <map>
#include <random>
#include <sstream>
#include <string>
#include <vector>

using namespace ns3;

namespace
{

// ---------------------------------------------------------------- workload

// Bounded Pareto flow sizes, exactly as crates/ka-sim/src/rng.rs: a Lomax
// located at `min`, truncated at `max`, scale solved from the mean.
double
BoundedParetoMean(double min, double max, double scale, double shape)
{
    double d = max - min;
    double sD = std::pow(1.0 + d / scale, -shape);
    double integral = std::abs(shape - 1.0) < 1e-12
                          ? scale * std::log(1.0 + d / scale)
                          : scale / (shape - 1.0) * (1.0 - std::pow(1.0 + d / scale, 1.0 - shape));
    return min + (integral - d * sD) / (1.0 - sD);
}

struct BoundedPareto
{
    double min;
    double max;
    double scale;
    double shape;
    double span;

    static BoundedPareto Build(double min, double max, double shape, double mean)
    {
        double lo = std::log(1e-9);
        double hi = std::log(1e12);
        for (int i = 0; i < 200; i++)
        {
            double mid = 0.5 * (lo + hi);
            if (BoundedParetoMean(min, max, std::exp(mid), shape) < mean)
            {
                lo = mid;
            }
            else
            {
                hi = mid;
            }
        }
        double scale = std::exp(0.5 * (lo + hi));
        return {min, max, scale, shape, 1.0 - std::pow(1.0 + (max - min) / scale, -shape)};
    }

    // u uniform in [0, 1): a draw rounded to whole packets.
    uint64_t Packets(double u) const
    {
        double x = min + scale * (std::pow(1.0 - u * span, -1.0 / shape) - 1.0);
        x = std::round(std::min(std::max(x, min), max));
        return static_cast<uint64_t>(std::min(std::max(x, std::max(std::ceil(min), 1.0)), std::floor(max)));
    }
};

// Uniform in [0, 1) from 53 random bits.
double
Uniform(std::mt19937_64& rng)
{
    return static_cast<double>(rng() >> 11) * 0x1.0p-53;
}

double
Exponential(std::mt19937_64& rng, double mean)
{
    return -mean * std::log(1.0 - Uniform(rng));
}

// ------------------------------------------------------------------- flows

struct Flow
{
    uint64_t packets;
    uint64_t bytes;
    double start;
    double end = -1.0;
    uint64_t received = 0;
};

std::vector<Flow> g_flows;
// (sender address, sender port) -> flow
std::map<std::pair<uint32_t, uint16_t>, size_t> g_flowOf;
uint64_t g_unknownBytes = 0;

const uint16_t kPort = 5001;

class OnOffSender : public Object
{
  public:
    OnOffSender(Ptr<Node> node,
                Ipv4Address self,
                Ipv4Address peer,
                uint64_t seed,
                uint32_t index,
                BoundedPareto sizes,
                double offMean,
                uint32_t payload,
                double stopAt)
        : m_node(node),
          m_self(self),
          m_peer(peer),
          m_rng(seed * 1000003ULL + index),
          m_sizes(sizes),
          m_offMean(offMean),
          m_payload(payload),
          m_stopAt(stopAt)
    {
    }

    void Start()
    {
        Simulator::Schedule(Seconds(Exponential(m_rng, m_offMean)), &OnOffSender::StartFlow, this);
    }

    // Instead of random sizes and off times: these sizes, one after the
    // other, each 1 s after the previous one completed.
    void SetFixedSizes(std::vector<uint64_t> sizes)
    {
        m_fixed = std::move(sizes);
    }

  private:
    void StartFlow()
    {
        if (Simulator::Now().GetSeconds() >= m_stopAt)
        {
            return;
        }
        if (!m_fixed.empty() && m_nextFixed >= m_fixed.size())
        {
            return;
        }
        uint64_t packets =
            m_fixed.empty() ? m_sizes.Packets(Uniform(m_rng)) : m_fixed[m_nextFixed++];
        uint64_t bytes = packets * m_payload;
        Ptr<Socket> sock = Socket::CreateSocket(m_node, TcpSocketFactory::GetTypeId());
        sock->Bind();
        Address local;
        sock->GetSockName(local);
        uint16_t port = InetSocketAddress::ConvertFrom(local).GetPort();
        size_t id = g_flows.size();
        g_flows.push_back(Flow{packets, bytes, Simulator::Now().GetSeconds()});
        g_flowOf[{m_self.Get(), port}] = id;
        m_done[id] = false;
        // Data starts at sequence 1 (ns-3's ISN is 0); the FIN takes
        // 1 + bytes: both are acknowledged once the ACK reaches bytes + 2.
        sock->TraceConnectWithoutContext(
            "HighestRxAck",
            MakeBoundCallback(&OnOffSender::OnAck, this, id, bytes + 2));
        sock->Connect(InetSocketAddress(m_peer, kPort));
        // The whole flow goes into the send buffer at once (SndBufSize is
        // larger than the largest flow), then close: the FIN rides on the
        // last data segment.
        int sent = sock->Send(Create<Packet>(static_cast<uint32_t>(bytes)));
        NS_ABORT_MSG_IF(sent != static_cast<int>(bytes), "send buffer too small");
        sock->Close();
    }

    static void OnAck(OnOffSender* self,
                      size_t id,
                      uint64_t finAcked,
                      SequenceNumber32 /* old */,
                      SequenceNumber32 now)
    {
        if (self->m_done[id] || now.GetValue() < finAcked)
        {
            return;
        }
        self->m_done[id] = true;
        double off =
            self->m_fixed.empty() ? Exponential(self->m_rng, self->m_offMean) : 1.0;
        Simulator::Schedule(Seconds(off), &OnOffSender::StartFlow, self);
    }

    Ptr<Node> m_node;
    Ipv4Address m_self;
    Ipv4Address m_peer;
    std::mt19937_64 m_rng;
    BoundedPareto m_sizes;
    double m_offMean;
    uint32_t m_payload;
    double m_stopAt;
    std::map<size_t, bool> m_done;
    std::vector<uint64_t> m_fixed;
    size_t m_nextFixed = 0;
};

// Accepts on kPort, reads everything the moment it is readable, closes when
// the peer has closed (ka-sim's receiver).
class Sink : public Object
{
  public:
    explicit Sink(Ptr<Node> node)
    {
        m_listener = Socket::CreateSocket(node, TcpSocketFactory::GetTypeId());
        m_listener->Bind(InetSocketAddress(Ipv4Address::GetAny(), kPort));
        m_listener->Listen();
        m_listener->SetAcceptCallback(MakeNullCallback<bool, Ptr<Socket>, const Address&>(),
                                      MakeCallback(&Sink::Accept, this));
    }

  private:
    void Accept(Ptr<Socket> s, const Address& /* from */)
    {
        s->SetRecvCallback(MakeCallback(&Sink::Read, this));
        s->SetCloseCallbacks(MakeCallback(&Sink::PeerClosed, this),
                             MakeCallback(&Sink::PeerClosed, this));
    }

    void Read(Ptr<Socket> s)
    {
        Address from;
        Ptr<Packet> p;
        while ((p = s->RecvFrom(from)) && p->GetSize() > 0)
        {
            InetSocketAddress a = InetSocketAddress::ConvertFrom(from);
            auto it = g_flowOf.find({a.GetIpv4().Get(), a.GetPort()});
            if (it == g_flowOf.end())
            {
                g_unknownBytes += p->GetSize();
                continue;
            }
            Flow& f = g_flows[it->second];
            f.received += p->GetSize();
            if (f.end < 0 && f.received >= f.bytes)
            {
                f.end = Simulator::Now().GetSeconds();
            }
        }
    }

    void PeerClosed(Ptr<Socket> s)
    {
        s->Close();
    }

    Ptr<Socket> m_listener;
};

uint64_t g_bottleneckDrops = 0;

void
CountDrop(Ptr<const Packet>)
{
    g_bottleneckDrops++;
}

} // namespace

int
main(int argc, char* argv[])
{
    double duration = 60.0;
    uint64_t seed = 1;
    uint32_t senders = 32;
    std::string out = "flows.csv";
    std::string recovery = "prr";
    std::string lone;

    CommandLine cmd(__FILE__);
    cmd.AddValue("duration", "simulated seconds (flows start before this)", duration);
    cmd.AddValue("seed", "workload seed", seed);
    cmd.AddValue("senders", "on-off senders (each with its own receiver)", senders);
    cmd.AddValue("out", "flows.csv to write", out);
    cmd.AddValue("recovery", "loss recovery: prr (ns-3.44's default) or classic", recovery);
    cmd.AddValue("lone",
                 "instead of the workload: one sender sends flows of these sizes "
                 "(packets, comma-separated) one at a time, 1 s apart",
                 lone);
    cmd.Parse(argc, argv);
    if (!lone.empty())
    {
        senders = 1;
    }

    // Paper profile (crates/ka-sim/scenarios/fig3-tcp.toml [tcp]) on
    // ns-3.44; every value set explicitly, defaults included.
    const uint32_t packetBytes = 1500;
    const uint32_t payload = packetBytes - 20 - 20 - 12; // IP, TCP, timestamps: 1448
    Config::SetDefault("ns3::TcpL4Protocol::SocketType", TypeIdValue(TcpNewReno::GetTypeId()));
    Config::SetDefault("ns3::TcpL4Protocol::RecoveryType",
                       TypeIdValue(recovery == "classic" ? TcpClassicRecovery::GetTypeId()
                                                         : TcpPrrRecovery::GetTypeId()));
    Config::SetDefault("ns3::TcpSocket::SegmentSize", UintegerValue(payload));
    Config::SetDefault("ns3::TcpSocket::InitialCwnd", UintegerValue(1));
    Config::SetDefault("ns3::TcpSocket::InitialSlowStartThreshold", UintegerValue(65535));
    Config::SetDefault("ns3::TcpSocket::DelAckTimeout", TimeValue(MilliSeconds(200)));
    Config::SetDefault("ns3::TcpSocket::DelAckCount", UintegerValue(2));
    Config::SetDefault("ns3::TcpSocket::TcpNoDelay", BooleanValue(true));
    // ka-sim's buffers (crates/ka-sim/src/host.rs BUFFER_BYTES = 4 MiB),
    // not ns-3's 128 KiB: the largest flow (2000 x 1448 bytes) is written
    // at once.
    Config::SetDefault("ns3::TcpSocket::SndBufSize", UintegerValue(4 << 20));
    Config::SetDefault("ns3::TcpSocket::RcvBufSize", UintegerValue(4 << 20));
    Config::SetDefault("ns3::TcpSocketBase::MinRto", TimeValue(Seconds(1)));
    Config::SetDefault("ns3::TcpSocketBase::ClockGranularity", TimeValue(MilliSeconds(1)));
    Config::SetDefault("ns3::TcpSocketBase::Sack", BooleanValue(true));
    Config::SetDefault("ns3::TcpSocketBase::Timestamp", BooleanValue(true));
    Config::SetDefault("ns3::TcpSocketBase::WindowScaling", BooleanValue(true));
    Config::SetDefault("ns3::RttEstimator::InitialEstimation", TimeValue(Seconds(1)));
    // TIME-WAIT 1 s as in ka-sim (it never matters: fresh ports).
    Config::SetDefault("ns3::TcpSocketBase::MaxSegLifetime", DoubleValue(0.5));

    NodeContainer routers;
    routers.Create(2);
    NodeContainer tx;
    tx.Create(senders);
    NodeContainer rx;
    rx.Create(senders);
    InternetStackHelper internet;
    internet.InstallAll();

    PointToPointHelper access;
    access.SetDeviceAttribute("DataRate", StringValue("1000Mbps"));
    access.SetChannelAttribute("Delay", StringValue("0ms"));
    access.SetQueue("ns3::DropTailQueue<Packet>", "MaxSize", StringValue("100000p"));
    PointToPointHelper bottleneck;
    bottleneck.SetDeviceAttribute("DataRate", StringValue("150Mbps"));
    bottleneck.SetChannelAttribute("Delay", StringValue("50ms"));
    bottleneck.SetQueue("ns3::DropTailQueue<Packet>", "MaxSize", StringValue("1000p"));

    Ipv4AddressHelper addr;
    addr.SetBase("10.0.0.0", "255.255.255.252");
    TrafficControlHelper tc;
    NetDeviceContainer core = bottleneck.Install(routers.Get(0), routers.Get(1));
    addr.Assign(core);
    addr.NewNetwork();
    tc.Uninstall(core);
    std::vector<Ipv4Address> txAddr;
    std::vector<Ipv4Address> rxAddr;
    for (uint32_t i = 0; i < senders; i++)
    {
        NetDeviceContainer a = access.Install(tx.Get(i), routers.Get(0));
        txAddr.push_back(addr.Assign(a).GetAddress(0));
        addr.NewNetwork();
        tc.Uninstall(a);
        NetDeviceContainer b = access.Install(routers.Get(1), rx.Get(i));
        rxAddr.push_back(addr.Assign(b).GetAddress(1));
        addr.NewNetwork();
        tc.Uninstall(b);
    }
    Ipv4GlobalRoutingHelper::PopulateRoutingTables();
    for (uint32_t i = 0; i < 2; i++)
    {
        Ptr<PointToPointNetDevice> d = DynamicCast<PointToPointNetDevice>(core.Get(i));
        d->GetQueue()->TraceConnectWithoutContext("Drop", MakeCallback(&CountDrop));
    }

    BoundedPareto sizes = BoundedPareto::Build(1.0, 2000.0, 1.8, 100.0);
    std::vector<Ptr<OnOffSender>> apps;
    std::vector<Ptr<Sink>> sinks;
    for (uint32_t i = 0; i < senders; i++)
    {
        sinks.push_back(CreateObject<Sink>(rx.Get(i)));
        apps.push_back(CreateObject<OnOffSender>(tx.Get(i),
                                                 txAddr[i],
                                                 rxAddr[i],
                                                 seed,
                                                 i,
                                                 sizes,
                                                 0.5,
                                                 payload,
                                                 duration));
        if (!lone.empty())
        {
            std::vector<uint64_t> fixed;
            std::stringstream list(lone);
            std::string item;
            while (std::getline(list, item, ','))
            {
                fixed.push_back(std::stoull(item));
            }
            apps.back()->SetFixedSizes(fixed);
        }
        apps.back()->Start();
    }

    Simulator::Stop(Seconds(duration));
    Simulator::Run();

    std::ofstream csv(out);
    csv << std::fixed << std::setprecision(9);
    csv << "flow,size_pkts,size_bytes,start_s,end_s,fct_s\n";
    size_t done = 0;
    for (size_t i = 0; i < g_flows.size(); i++)
    {
        const Flow& f = g_flows[i];
        csv << i << ',' << f.packets << ',' << f.bytes << ',' << f.start << ',';
        if (f.end >= 0)
        {
            csv << f.end << ',' << (f.end - f.start);
            done++;
        }
        else
        {
            csv << ',';
        }
        csv << '\n';
    }
    std::cerr << "ns-3: " << duration << " s simulated, "
              << g_flows.size() << " flows (" << done << " completed), bottleneck drops "
              << g_bottleneckDrops << ", unknown bytes " << g_unknownBytes << "\n";
    Simulator::Destroy();
    return 0;
}
