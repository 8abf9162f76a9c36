/*
 * dl_abi.h — every entry point schedc loads with dlopen (CUDA driver, NVRTC, NCCL) and every
 * constant it passes them, declared once with their ABI types so the build needs no CUDA SDK.
 * The loaders build their tables and symbol lists from these lists; tests/cuda/test_abi.cc
 * checks each line against the toolkit's cuda.h, nvrtc.h and nccl.h, and test_abi_syms against
 * the libraries' exports. Internal to runtime/ (and those tests).
 */
#ifndef SC_DL_ABI_H
#define SC_DL_ABI_H

#include <stdint.h>

#include "cuda_dev.h" /* sc_ipc: a CUipcMemHandle, by value */

/* CUresult, nvrtcResult, ncclResult_t: enums, passed and returned as int. */
typedef int sc_abi_res;
typedef uint64_t sc_cudptr; /* CUdeviceptr */
typedef struct sc_nccl_id { unsigned char b[128]; } sc_nccl_id; /* ncclUniqueId, by value */
typedef struct sc_nvrtc_prog_ *sc_nvrtc_prog;                    /* nvrtcProgram */

/* X(field, symbol, result type, (parameter types)). Opaque handles (contexts, modules,
 * functions, streams, events, communicators) are void *. The exported name is the symbol:
 * where cuda.h maps an entry point to a versioned one (cuMemAlloc → cuMemAlloc_v2), the
 * versioned one, since dlsym does not see cuda.h's macros. */
#define SC_ABI_CUDA(X)                                                                                            \
  X(Init, cuInit, sc_abi_res, (unsigned))                                                                         \
  X(DeviceGetCount, cuDeviceGetCount, sc_abi_res, (int *))                                                        \
  X(DeviceGet, cuDeviceGet, sc_abi_res, (int *, int))                                                             \
  X(DeviceGetAttribute, cuDeviceGetAttribute, sc_abi_res, (int *, int, int))                                      \
  X(PrimaryCtxRetain, cuDevicePrimaryCtxRetain, sc_abi_res, (void **, int))                                       \
  X(CtxSetCurrent, cuCtxSetCurrent, sc_abi_res, (void *))                                                         \
  X(CtxEnablePeerAccess, cuCtxEnablePeerAccess, sc_abi_res, (void *, unsigned))                                   \
  X(MemAlloc, cuMemAlloc_v2, sc_abi_res, (sc_cudptr *, size_t))                                                   \
  X(MemFree, cuMemFree_v2, sc_abi_res, (sc_cudptr))                                                               \
  X(MemsetD8Async, cuMemsetD8Async, sc_abi_res, (sc_cudptr, unsigned char, size_t, void *))                       \
  X(MemcpyAsync, cuMemcpyAsync, sc_abi_res, (sc_cudptr, sc_cudptr, size_t, void *))                               \
  X(ModuleLoadData, cuModuleLoadData, sc_abi_res, (void **, const void *))                                        \
  X(ModuleUnload, cuModuleUnload, sc_abi_res, (void *))                                                           \
  X(ModuleGetFunction, cuModuleGetFunction, sc_abi_res, (void **, void *, const char *))                          \
  X(LaunchKernel, cuLaunchKernel, sc_abi_res,                                                                     \
    (void *, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, void *, void **, void **))     \
  X(LaunchCooperativeKernel, cuLaunchCooperativeKernel, sc_abi_res,                                               \
    (void *, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, void *, void **))              \
  X(StreamCreate, cuStreamCreate, sc_abi_res, (void **, unsigned))                                                \
  X(StreamDestroy, cuStreamDestroy_v2, sc_abi_res, (void *))                                                      \
  X(StreamSynchronize, cuStreamSynchronize, sc_abi_res, (void *))                                                 \
  X(StreamQuery, cuStreamQuery, sc_abi_res, (void *))                                                             \
  X(StreamWaitEvent, cuStreamWaitEvent, sc_abi_res, (void *, void *, unsigned))                                   \
  X(EventCreate, cuEventCreate, sc_abi_res, (void **, unsigned))                                                  \
  X(EventRecord, cuEventRecord, sc_abi_res, (void *, void *))                                                     \
  X(EventDestroy, cuEventDestroy_v2, sc_abi_res, (void *))                                                        \
  X(GetErrorString, cuGetErrorString, sc_abi_res, (sc_abi_res, const char **))                                    \
  X(IpcGetMemHandle, cuIpcGetMemHandle, sc_abi_res, (sc_ipc *, sc_cudptr))                                        \
  X(IpcOpenMemHandle, cuIpcOpenMemHandle_v2, sc_abi_res, (sc_cudptr *, sc_ipc, unsigned))                         \
  X(IpcCloseMemHandle, cuIpcCloseMemHandle, sc_abi_res, (sc_cudptr))

#define SC_ABI_NVRTC(X)                                                                                           \
  X(Version, nvrtcVersion, sc_abi_res, (int *, int *))                                                            \
  X(CreateProgram, nvrtcCreateProgram, sc_abi_res,                                                                \
    (sc_nvrtc_prog *, const char *, const char *, int, const char *const *, const char *const *))                 \
  X(DestroyProgram, nvrtcDestroyProgram, sc_abi_res, (sc_nvrtc_prog *))                                           \
  X(CompileProgram, nvrtcCompileProgram, sc_abi_res, (sc_nvrtc_prog, int, const char *const *))                   \
  X(GetProgramLogSize, nvrtcGetProgramLogSize, sc_abi_res, (sc_nvrtc_prog, size_t *))                             \
  X(GetProgramLog, nvrtcGetProgramLog, sc_abi_res, (sc_nvrtc_prog, char *))                                       \
  X(GetPTXSize, nvrtcGetPTXSize, sc_abi_res, (sc_nvrtc_prog, size_t *))                                           \
  X(GetPTX, nvrtcGetPTX, sc_abi_res, (sc_nvrtc_prog, char *))                                                     \
  X(GetCUBINSize, nvrtcGetCUBINSize, sc_abi_res, (sc_nvrtc_prog, size_t *))                                       \
  X(GetCUBIN, nvrtcGetCUBIN, sc_abi_res, (sc_nvrtc_prog, char *))                                                 \
  X(GetErrorString, nvrtcGetErrorString, const char *, (sc_abi_res))

#define SC_ABI_NCCL(X)                                                                                            \
  X(GetVersion, ncclGetVersion, sc_abi_res, (int *))                                                              \
  X(GetUniqueId, ncclGetUniqueId, sc_abi_res, (sc_nccl_id *))                                                     \
  X(CommInitRank, ncclCommInitRank, sc_abi_res, (void **, int, sc_nccl_id, int))                                  \
  X(Send, ncclSend, sc_abi_res, (const void *, size_t, sc_abi_res, int, void *, void *))                          \
  X(Recv, ncclRecv, sc_abi_res, (void *, size_t, sc_abi_res, int, void *, void *))                                \
  X(GroupStart, ncclGroupStart, sc_abi_res, (void))                                                               \
  X(GroupEnd, ncclGroupEnd, sc_abi_res, (void))                                                                   \
  X(CommGetAsyncError, ncclCommGetAsyncError, sc_abi_res, (void *, sc_abi_res *))                                 \
  X(CommDestroy, ncclCommDestroy, sc_abi_res, (void *))                                                           \
  X(CommAbort, ncclCommAbort, sc_abi_res, (void *))                                                               \
  X(GetErrorString, ncclGetErrorString, const char *, (sc_abi_res))                                               \
  X(GetLastError, ncclGetLastError, const char *, (void *))

/* K(ours, the header's name, value): the constants schedc passes or tests for. */
#define SC_ABI_CONSTANTS(K)                                                                                       \
  K(SC_CU_ATTR_CLOCK_KHZ, CU_DEVICE_ATTRIBUTE_CLOCK_RATE, 13)                                                     \
  K(SC_CU_ATTR_SMS, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, 16)                                                 \
  K(SC_CU_ATTR_PCI_BUS, CU_DEVICE_ATTRIBUTE_PCI_BUS_ID, 33)                                                       \
  K(SC_CU_ATTR_PCI_DEVICE, CU_DEVICE_ATTRIBUTE_PCI_DEVICE_ID, 34)                                                 \
  K(SC_CU_ATTR_PCI_DOMAIN, CU_DEVICE_ATTRIBUTE_PCI_DOMAIN_ID, 50)                                                 \
  K(SC_CU_ATTR_CC_MAJOR, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, 75)                                        \
  K(SC_CU_ATTR_CC_MINOR, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, 76)                                        \
  K(SC_CU_ATTR_COOP, CU_DEVICE_ATTRIBUTE_COOPERATIVE_LAUNCH, 95)                                                  \
  K(SC_CU_IPC_LAZY_ENABLE_PEER_ACCESS, CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS, 1)                                    \
  K(SC_CU_EVENT_DISABLE_TIMING, CU_EVENT_DISABLE_TIMING, 2)                                                       \
  K(SC_CU_STREAM_NON_BLOCKING, CU_STREAM_NON_BLOCKING, 1)                                                         \
  K(SC_CU_ERR_OUT_OF_MEMORY, CUDA_ERROR_OUT_OF_MEMORY, 2)                                                         \
  K(SC_CU_ERR_NOT_READY, CUDA_ERROR_NOT_READY, 600)                                                               \
  K(SC_CU_ERR_PEER_ALREADY_ENABLED, CUDA_ERROR_PEER_ACCESS_ALREADY_ENABLED, 704)                                  \
  K(SC_NCCL_UINT8, ncclUint8, 1)                                                                                  \
  K(SC_NCCL_IN_PROGRESS, ncclInProgress, 7)

enum {
#define SC_ABI_K(ours, theirs, value) ours = value,
  SC_ABI_CONSTANTS(SC_ABI_K)
#undef SC_ABI_K
};

/* A table of one library's entry points, `struct { SC_ABI_CUDA(SC_ABI_FIELD) } T;`, and the
 * symbol list that fills it (dl.h): with `#define S(f, sym, r, p) SC_ABI_SYM(T, f, sym)`,
 * `sc_dlsym syms[] = {SC_ABI_CUDA(S)};`. */
#define SC_ABI_FIELD(field, sym, res, params) res(*field) params;
#define SC_ABI_SYM(tab, field, sym) {(void **)&(tab).field, #sym},

#endif
