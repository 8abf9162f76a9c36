/*
 * api.c — the public collectives: a call dispatched (dispatch.c), then, when its result is in
 * host memory as the backend returns (SC_CAP_HOST_RESULT), verified across the ranks
 * (integrity.c). A stream-ordered backend verifies inside its own collective. The whole call
 * computes in the library's floating-point environment, not the calling thread's (fpenv.h).
 */
#include "comm.h"
#include "fpenv.h"

schedc_status sc_coll_verified(schedc_comm *c, int coll, const void *send, void *recv, size_t count, schedc_dtype dtype,
                               schedc_op op, int root, const schedc_plan *plan, sc_result *res) {
  sc_call k;
  sc_result mine;
  sc_fpenv env;
  if (!res) res = &mine;
  sc_fpenv_enter(&env);
  schedc_status st = sc_call_make(c, coll, send, recv, count, dtype, op, root, plan, 0, &k);
  if (st == SCHEDC_OK) st = sc_call_run(c, &k, res);
  if (st == SCHEDC_OK && (c->be->caps & SC_CAP_HOST_RESULT)) st = sc_integrity_check(c, &k, res);
  sc_fpenv_leave(&env);
  return st;
}

schedc_status schedc_allreduce(const void *sendbuf, void *recvbuf, size_t count, schedc_dtype dtype, schedc_op op,
                               schedc_comm *comm, const schedc_plan *plan) {
  return sc_coll_verified(comm, SCHEDC_ALLREDUCE, sendbuf, recvbuf, count, dtype, op, 0, plan, NULL);
}
schedc_status schedc_reduce_scatter(const void *sendbuf, void *recvbuf, size_t recvcount, schedc_dtype dtype,
                                    schedc_op op, schedc_comm *comm, const schedc_plan *plan) {
  return sc_coll_verified(comm, SCHEDC_REDUCE_SCATTER, sendbuf, recvbuf, recvcount, dtype, op, 0, plan, NULL);
}
schedc_status schedc_allgather(const void *sendbuf, void *recvbuf, size_t sendcount, schedc_dtype dtype,
                               schedc_comm *comm, const schedc_plan *plan) {
  return sc_coll_verified(comm, SCHEDC_ALLGATHER, sendbuf, recvbuf, sendcount, dtype, SCHEDC_SUM, 0, plan, NULL);
}
schedc_status schedc_broadcast(const void *sendbuf, void *recvbuf, size_t count, schedc_dtype dtype, int root,
                               schedc_comm *comm, const schedc_plan *plan) {
  return sc_coll_verified(comm, SCHEDC_BROADCAST, sendbuf, recvbuf, count, dtype, SCHEDC_SUM, root, plan, NULL);
}
schedc_status schedc_reduce(const void *sendbuf, void *recvbuf, size_t count, schedc_dtype dtype, schedc_op op, int root,
                            schedc_comm *comm, const schedc_plan *plan) {
  return sc_coll_verified(comm, SCHEDC_REDUCE, sendbuf, recvbuf, count, dtype, op, root, plan, NULL);
}
