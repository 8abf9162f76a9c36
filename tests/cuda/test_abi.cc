// test_abi.cc — schedc declares the CUDA driver, NVRTC and NCCL entry points itself
// (runtime/dl_abi.h) so that it builds without a CUDA SDK; a wrong declaration would only show
// on a GPU, as garbage or a crash. This file is compiled (ctest runs the compiler on it, test
// cuda.abi) against the toolkit's own cuda.h, nvrtc.h and nccl.h, and fails to compile, naming
// the entry point, where a declaration differs from the header's in what the calling convention
// sees: the number of parameters, and each parameter's and the result's class (pointer, integer
// or by-value struct) and size. Opaque handle types (CUcontext, nvrtcProgram, ncclComm_t) are
// pointers on both sides; enums are integers of their size. Every constant must equal the
// header's. C++ only for the type traits; the project itself is C.
#include <cuda.h>
#include <nccl.h>
#include <nvrtc.h>

#include <cstdio>
#include <type_traits>

#include "dl_abi.h"

namespace {

// What the calling convention sees of one type.
struct pointer {};
template <class T, class = void> struct cls { using type = T; };  // void
template <class T> struct cls<T *> { using type = pointer; };      // any pointer
template <unsigned N> struct integer {};
template <unsigned N> struct blob {};
template <class T>
struct cls<T, typename std::enable_if<std::is_integral<T>::value || std::is_enum<T>::value>::type> {
  using type = integer<sizeof(T)>;
};
template <class T> struct cls<T, typename std::enable_if<std::is_class<T>::value>::type> { using type = blob<sizeof(T)>; };

template <class... A> struct list {};
template <class F> struct sig;
template <class R, class... A> struct sig<R (*)(A...)> {
  using type = list<typename cls<R>::type, typename cls<A>::type...>;
};
template <class Ours, class Theirs> constexpr bool same_abi() {
  return std::is_same<typename sig<Ours>::type, typename sig<Theirs>::type>::value;
}

// Sanity of the traits themselves: these differ, so the checks below can fail.
static_assert(!same_abi<int (*)(int), int (*)(long)>(), "int and long must differ");
static_assert(!same_abi<int (*)(void *), int (*)(unsigned long long)>(), "pointer and integer must differ");
static_assert(!same_abi<int (*)(int), int (*)(int, int)>(), "arity must count");
static_assert(same_abi<int (*)(CUcontext *), int (*)(void **)>(), "handles are pointers");

#define CHECK(field, sym, res, params)                                                                   \
  static_assert(same_abi<res(*) params, decltype(&sym)>(),                                              \
                "runtime/dl_abi.h declares " #sym " differently from the toolkit's header");
SC_ABI_CUDA(CHECK)
SC_ABI_NVRTC(CHECK)
SC_ABI_NCCL(CHECK)
#undef CHECK

#define CONST(ours, theirs, value) \
  static_assert(ours == static_cast<long long>(theirs), #ours " differs from the toolkit's " #theirs);
SC_ABI_CONSTANTS(CONST)
#undef CONST

static_assert(sizeof(sc_ipc) == sizeof(CUipcMemHandle), "sc_ipc is a CUipcMemHandle");
static_assert(sizeof(sc_nccl_id) == sizeof(ncclUniqueId), "sc_nccl_id is an ncclUniqueId");
static_assert(sizeof(sc_cudptr) == sizeof(CUdeviceptr), "sc_cudptr is a CUdeviceptr");

}  // namespace

int main() {
#define COUNT(...) +1
  std::printf("ok: %d entry points and %d constants agree with cuda.h, nvrtc.h and nccl.h (CUDA %d, NCCL %d)\n",
              0 SC_ABI_CUDA(COUNT) SC_ABI_NVRTC(COUNT) SC_ABI_NCCL(COUNT), 0 SC_ABI_CONSTANTS(COUNT), CUDA_VERSION,
              NCCL_VERSION_CODE);
  return 0;
}
