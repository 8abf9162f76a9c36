// gloo_allreduce.cc — baseline: Gloo's allreduce (Debian's libgloo, TCP transport over loopback,
// file-store rendezvous), written independently of schedc (no schedc code), printing the columns
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

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <sys/stat.h>
#include <vector>

static size_t parse(const char *s) {
  char *e;
  size_t v = strtoull(s, &e, 10);
  if (*e == 'K' || *e == 'k') v <<= 10;
  else if (*e == 'M' || *e == 'm') v <<= 20;
  else if (*e == 'G' || *e == 'g') v <<= 30;
  return v;
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
  int rank = atoi(r), n = atoi(s);
  std::vector<size_t> sizes = {8, 4096, 1 << 20, 64 << 20};
  int iters = 20, warm = 5;
  for (int i = 1; i + 1 < argc; i += 2) {
    if (!strcmp(argv[i], "--iters")) iters = atoi(argv[i + 1]);
    else if (!strcmp(argv[i], "--warmup")) warm = atoi(argv[i + 1]);
    else if (!strcmp(argv[i], "--sizes")) {
      sizes.clear();
      for (char *t = strtok(argv[i + 1], ","); t; t = strtok(nullptr, ",")) sizes.push_back(parse(t));
    }
  }
  const char *job = env2("SCHEDC_JOB", "OMPI_MCA_orte_hnp_uri");
  std::string dir = std::string("/tmp/gloo-bench-") + (job ? std::to_string(std::hash<std::string>()(job)) : "x");
  mkdir(dir.c_str(), 0700);
  gloo::transport::tcp::attr attr("127.0.0.1");
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
    printf("# Gloo allreduce baseline (libgloo %d.%d, tcp loopback), %d ranks, f32 sum, %d iterations after %d warm-up\n",
           GLOO_VERSION_MAJOR, GLOO_VERSION_MINOR, n, iters, warm);
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
