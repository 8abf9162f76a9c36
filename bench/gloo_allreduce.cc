// gloo_allreduce.cc — baseline: Gloo's allreduce (Debian's libgloo, TCP transport over loopback or
// GLOO_SOCKET_IFNAME's interface, file-store rendezvous in /tmp), written independently of schedc (no schedc code), printing the columns
// of `schedc bench`: size count type op time_us algbw busbw (busbw = algbw * 2(n-1)/n; time =
// slowest rank's mean of back-to-back calls after warm-up). Start N processes with the rank in
// the environment:   schedc launch -n N -- build/gloo_allreduce [--sizes 8,4K,1M,64M] [--iters I]
// (SCHEDC_RANK/SCHEDC_NRANKS/SCHEDC_JOB, or OMPI_COMM_WORLD_RANK/SIZE under mpirun).
#include <gloo/allreduce.h>
#include <gloo/config.h>
#include <gloo/barrier.h>
#include <gloo/math.h>
#include <gloo/rendezvous/context.h>
#include <gloo/rendezvous/file_store.h>
#include <gloo/rendezvous/prefix_store.h>
#include <gloo/transport/tcp/device.h>

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <getopt.h>
#include <string>
#include <sys/stat.h>
#include <vector>

// digits with an optional K/M/G suffix, in [lo, hi] (no sign, blank, other suffix or overflow:
// `--iters 5x` is an error, not 5): true, with the value in out
static bool parse(const char *s, unsigned long long lo, unsigned long long hi, unsigned long long &out) {
  if (!s || *s < '0' || *s > '9') return false;
  char *e;
  errno = 0;
  unsigned long long v = strtoull(s, &e, 10);
  int shift = *e == 'K' || *e == 'k' ? 10 : *e == 'M' || *e == 'm' ? 20 : *e == 'G' || *e == 'g' ? 30 : 0;
  if (shift) e++;
  if (errno || *e || v > hi >> shift || (v << shift) < lo) return false;
  out = v << shift;
  return true;
}

static int usage(const char *fmt, const char *a, const char *b = "") {
  fprintf(stderr, "gloo_allreduce: ");
  fprintf(stderr, fmt, a, b);
  fprintf(stderr, "\n");
  return 2;
}

static const char *env2(const char *a, const char *b) {
  const char *v = getenv(a);
  return v ? v : getenv(b);
}

int main(int argc, char **argv) {
  const char *r = env2("SCHEDC_RANK", "OMPI_COMM_WORLD_RANK"), *s = env2("SCHEDC_NRANKS", "OMPI_COMM_WORLD_SIZE");
  if (!r || !s) {
    fprintf(stderr, "gloo_allreduce: no rank in the environment (start with schedc launch -n N -- ...)\n");
    return 2;
  }
  unsigned long long ur, un, v;
  if (!parse(s, 1, 65536, un) || !parse(r, 0, un - 1, ur)) return usage("the environment's rank '%s' and rank count '%s': want a count N from 1 to 65536 and a rank from 0 to N-1", r, s);
  int rank = (int)ur, n = (int)un;
  std::vector<size_t> sizes = {8, 4096, 1 << 20, 64 << 20};
  int iters = 20, warm = 5;
  static const struct option lo[] = {{"sizes", required_argument, nullptr, 's'}, {"iters", required_argument, nullptr, 'i'},
                                     {"warmup", required_argument, nullptr, 'w'}, {nullptr, 0, nullptr, 0}};
  opterr = 0;
  for (int c; (c = getopt_long(argc, argv, ":", lo, nullptr)) != -1;) {
    if (c == 'i') { if (!parse(optarg, 1, 1 << 24, v)) return usage("--iters '%s' is not a count from 1 to 2^24", optarg); iters = (int)v; }
    else if (c == 'w') { if (!parse(optarg, 0, 1 << 24, v)) return usage("--warmup '%s' is not a count from 0 to 2^24", optarg); warm = (int)v; }
    else if (c == 's') {
      sizes.clear();
      for (const char *p = optarg;; p++) {
        size_t len = strcspn(p, ",");
        std::string item(p, len);
        if (!parse(item.c_str(), 1, 1ull << 40, v)) return usage("--sizes '%s': bad size '%s' (1 B to 2^40)", optarg, item.c_str());
        sizes.push_back(v);
        p += len;
        if (!*p) break;
      }
    } else if (c == ':') return usage("%s needs a value", argv[optind - 1]);
    else return usage("unknown option '%s'", argv[optind - 1]);
  }
  if (optind < argc) return usage("unexpected '%s'", argv[optind]);
  const char *job = env2("SCHEDC_JOB", "OMPI_MCA_orte_hnp_uri");
  std::string dir = std::string("/tmp/gloo-bench-") + (job ? std::to_string(std::hash<std::string>()(job)) : "x");
  mkdir(dir.c_str(), 0700);
  // GLOO_SOCKET_IFNAME (PyTorch's name): the interface to bind, across hosts (the test cluster's
  // eth0); else loopback
  gloo::transport::tcp::attr attr("127.0.0.1");
  const char *ifname = getenv("GLOO_SOCKET_IFNAME");
  if (ifname && *ifname) {
    attr.hostname.clear();
    attr.iface = ifname;
  }
  auto dev = gloo::transport::tcp::CreateDevice(attr);
  gloo::rendezvous::FileStore fs(dir);
  gloo::rendezvous::PrefixStore store("bench", fs);
  auto ctx = std::make_shared<gloo::rendezvous::Context>(rank, n);
  ctx->connectFullMesh(store, dev);
  size_t mx = 0;
  for (size_t v : sizes) mx = v > mx ? v : mx;
  std::vector<float> in(mx / 4 + 1), out(mx / 4 + 1);
  for (size_t i = 0; i < in.size(); i++) in[i] = (float)(i % 977) * 0.001f;
  if (rank == 0) {
    printf("# Gloo allreduce baseline (libgloo %d.%d, tcp %s), %d ranks, f32 sum, %d iterations after %d warm-up\n",
           GLOO_VERSION_MAJOR, GLOO_VERSION_MINOR, ifname && *ifname ? ifname : "loopback", n, iters, warm);
    printf("#%11s %12s %6s %6s %12s %10s %10s\n", "size", "count", "type", "op", "time_us", "algbw", "busbw");
  }
  auto sum = static_cast<void (*)(void *, const void *, const void *, size_t)>(&gloo::sum<float>);
  auto mxf = static_cast<void (*)(void *, const void *, const void *, size_t)>(&gloo::max<double>);
  for (size_t size : sizes) {
    size_t count = size / 4;
    auto call = [&]() {
      gloo::AllreduceOptions o(ctx);
      o.setInput(in.data(), count);
      o.setOutput(out.data(), count);
      o.setReduceFunction(sum);
      o.setTag(1);
      gloo::allreduce(o);
    };
    for (int w = 0; w < warm; w++) call();
    gloo::BarrierOptions b(ctx);
    gloo::barrier(b);
    auto t0 = std::chrono::steady_clock::now();
    for (int it = 0; it < iters; it++) call();
    double us = std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count() / iters, worst = us;
    gloo::AllreduceOptions mo(ctx);
    mo.setInput(&us, 1);
    mo.setOutput(&worst, 1);
    mo.setReduceFunction(mxf);
    mo.setTag(2);
    gloo::allreduce(mo);
    if (rank == 0) {
      double alg = (double)size / (worst * 1e3);
      printf(" %11zu %12zu %6s %6s %12.2f %10.3f %10.3f\n", size, count, "f32", "sum", worst, alg, alg * 2.0 * (n - 1) / n);
      fflush(stdout);
    }
  }
  return 0;
}
