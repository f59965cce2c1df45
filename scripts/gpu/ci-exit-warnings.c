/* Two processes, one rank each, on GPUs 0 and 1: rank 1 exits without ncclCommDestroy while
 * rank 0 is still alive, the situation behind NCCL's exit-time warnings on the surviving ranks.
 * Run by scripts/gpu/40-ci.sh so that `explain` reads real NCCL output. Declares the few NCCL and
 * CUDA functions it calls, so it builds without the development headers. */
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

typedef struct { char internal[128]; } ncclUniqueId;
typedef void *ncclComm_t;
typedef void *cudaStream_t;
int ncclGetUniqueId(ncclUniqueId *id);
int ncclCommInitRank(ncclComm_t *comm, int nranks, ncclUniqueId id, int rank);
int ncclAllReduce(const void *send, void *recv, size_t count, int type, int op, ncclComm_t comm,
                  cudaStream_t stream);
int ncclCommDestroy(ncclComm_t comm);
int cudaSetDevice(int device);
int cudaMalloc(void **ptr, size_t size);
int cudaStreamCreate(cudaStream_t *stream);
int cudaStreamSynchronize(cudaStream_t stream);

#define CHECK(call)                                                   \
  do {                                                                \
    int rc_ = (call);                                                 \
    if (rc_ != 0) {                                                   \
      fprintf(stderr, "rank %d: %s returned %d\n", rank, #call, rc_); \
      exit(1);                                                        \
    }                                                                 \
  } while (0)

int main(void) {
  int ids[2];
  if (pipe(ids) != 0)
    return 1;
  pid_t child = fork();
  if (child < 0)
    return 1;
  int rank = child == 0 ? 1 : 0;
  ncclUniqueId id;
  if (rank == 0) {
    CHECK(ncclGetUniqueId(&id));
    if (write(ids[1], &id, sizeof id) != (ssize_t)sizeof id)
      return 1;
  } else if (read(ids[0], &id, sizeof id) != (ssize_t)sizeof id) {
    return 1;
  }
  CHECK(cudaSetDevice(rank));
  void *buf;
  cudaStream_t stream;
  ncclComm_t comm;
  CHECK(cudaMalloc(&buf, 4096));
  CHECK(cudaStreamCreate(&stream));
  CHECK(ncclCommInitRank(&comm, 2, id, rank));
  CHECK(ncclAllReduce(buf, buf, 1024, 7 /* ncclFloat32 */, 0 /* ncclSum */, comm, stream));
  CHECK(cudaStreamSynchronize(stream));
  if (rank == 1) {
    printf("rank 1 (pid %d): allreduce done, exiting without ncclCommDestroy\n", (int)getpid());
    fflush(stdout);
    exit(0);
  }
  sleep(3); /* rank 1 is gone by now; this rank's proxy threads see its connections close */
  int status = 0;
  waitpid(child, &status, 0);
  CHECK(ncclCommDestroy(comm));
  printf("rank 0 (pid %d): destroyed its communicator after rank 1 exited (status %d)\n", (int)getpid(),
         WEXITSTATUS(status));
  return 0;
}
