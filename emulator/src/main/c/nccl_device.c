/* The host side of NCCL's device API (NCCL 2.28, in its 2.29.3 form: NVIDIA/nccl v2.29.3-1
 * src/include/nccl_device/core.h, src/dev_runtime.cc and src/nccl_device's core.cc, ll_a2a.cc,
 * lsa_barrier.cc, gin_barrier.cc): device communicators, teams and the communicator's
 * properties. There are no kernels here, so what a device communicator holds for a kernel is
 * left empty; what the host can see of it is right: its ranks, and the handle NCCL's
 * ncclDevCommDestroy finds it by (resourceWindow). */
#include <string.h>

#include "emu.h"

/* validateNcclVersion: a struct from a newer NCCL than this one is refused */
static ncclResult_t check_version(unsigned int version) {
  if (version > NCCL_VERSION_CODE) {
    emu_warn("NCCL library version is too old. This application was compiled with NCCL version "
             "%u, but is running with NCCL library version %d.",
             version, NCCL_VERSION_CODE);
    return ncclInvalidUsage;
  }
  return ncclSuccess;
}

ncclResult_t ncclCommQueryProperties(ncclComm_t comm, ncclCommProperties_t *props) {
  NCCL_KNOB("ncclCommQueryProperties");
  const char *api = "ncclCommQueryProperties";
  ncclResult_t r = emu_comm_acquire(comm, api);
  if (r != ncclSuccess)
    return r;
  NCCL_HANG(comm);
  if (!props) {
    emu_warn("%s : props argument is NULL", api);
    r = ncclInvalidArgument;
  } else if (props->magic != NCCL_API_MAGIC) {
    emu_warn("Cannot get communicator properties: ncclCommProperties_t argument must be "
             "initialized via NCCL_COMM_PROPERTIES_INITIALIZER");
    r = ncclInvalidUsage;
  } else if ((r = check_version(props->version)) == ncclSuccess) {
    props->rank = comm->rank;
    props->nRanks = comm->nranks;
    props->cudaDev = comm->device;
    props->nvmlDev = comm->device;
    props->deviceApiSupport = true; /* symmetric memory: windows work */
    props->multimemSupport = false; /* no NVLink SHARP */
    props->ginType = NCCL_GIN_TYPE_NONE;
  }
  emu_comm_release(comm);
  return r;
}
NCCL_ALIAS(ncclCommQueryProperties);

ncclResult_t ncclDevCommCreate(ncclComm_t comm, ncclDevCommRequirements_t const *reqs,
                               ncclDevComm_t *outDevComm) {
  NCCL_KNOB("ncclDevCommCreate");
  const char *api = "ncclDevCommCreate";
  ncclResult_t r = emu_comm_acquire(comm, api);
  if (r != ncclSuccess)
    return r;
  NCCL_HANG(comm);
  if (!reqs || !outDevComm) {
    emu_warn("%s : %s argument is NULL", api, reqs ? "outDevComm" : "reqs");
    emu_comm_release(comm);
    return ncclInvalidArgument;
  }
  if (reqs->magic != NCCL_API_MAGIC) {
    emu_warn("Cannot create device communicator: ncclDevCommRequirements_t argument must be "
             "initialized via NCCL_DEV_COMM_REQUIREMENTS_INITIALIZER");
    emu_comm_release(comm);
    return ncclInvalidUsage;
  }
  if ((r = check_version(reqs->version)) != ncclSuccess) {
    emu_comm_release(comm);
    return r;
  }
  struct emu_clique *c = comm->clique;
  pthread_mutex_lock(&c->mu);
  struct emu_res *d = NULL;
  if (comm->state >= COMM_DESTROYING)
    r = ncclInvalidUsage;
  else if (!(d = emu_res_new_locked(comm, EMU_DEVCOMM, NULL, 0, 0)))
    r = ncclSystemError;
  pthread_mutex_unlock(&c->mu);
  if (r == ncclInvalidUsage)
    emu_warn("%s: comm %p is being destroyed", api, (void *)comm);
  if (r == ncclSuccess) {
    memset(outDevComm, 0, sizeof(*outDevComm));
    outDevComm->rank = comm->rank;
    outDevComm->nRanks = comm->nranks;
    outDevComm->lsaRank = comm->rank; /* one host: the LSA team is the world */
    outDevComm->lsaSize = comm->nranks;
    outDevComm->resourceWindow = (ncclWindow_t)d;
    outDevComm->ginContextCount = 0;
  }
  emu_comm_release(comm);
  return r;
}
NCCL_ALIAS(ncclDevCommCreate);

ncclResult_t ncclDevCommDestroy(ncclComm_t comm, ncclDevComm_t const *devComm) {
  NCCL_KNOB("ncclDevCommDestroy");
  const char *api = "ncclDevCommDestroy";
  ncclResult_t r = emu_comm_acquire(comm, api);
  if (r != ncclSuccess)
    return r;
  NCCL_HANG(comm);
  if (!devComm) {
    emu_warn("%s : devComm argument is NULL", api);
    emu_comm_release(comm);
    return ncclInvalidArgument;
  }
  if (devComm->resourceWindow) {
    if (!emu_res_end(comm, devComm->resourceWindow, EMU_DEVCOMM)) {
      emu_warn("%s: %p is not a device communicator of comm %p (destroyed already?)", api,
               (const void *)devComm, (void *)comm);
      r = ncclInvalidArgument;
    }
  }
  emu_comm_release(comm);
  return r;
}
NCCL_ALIAS(ncclDevCommDestroy);

/* ---------------------------------------------------------------- teams (nccl_device/core.cc) */

/* As NCCL's: no check of the comm, whose fields are read as given. A handle that is not a live
 * communicator gives an empty team here instead of a crash. */
static bool team_comm(ncclComm_t comm, struct ncclComm **out) {
  if (!comm || !emu_rt_live_acquire(comm, EMU_COMM))
    return false;
  *out = comm;
  return true;
}

ncclTeam_t ncclTeamWorld(ncclComm_t comm) {
  ncclTeam_t t = {0, 0, 0};
  struct ncclComm *c;
  if (team_comm(comm, &c)) {
    t = (ncclTeam_t){c->nranks, c->rank, 1};
    emu_comm_release(c);
  }
  return t;
}
NCCL_ALIAS(ncclTeamWorld);

ncclTeam_t ncclTeamLsa(ncclComm_t comm) { return ncclTeamWorld(comm); }
NCCL_ALIAS(ncclTeamLsa);

/* the ranks of one LSA team each: nRanks / lsaSize = 1 */
ncclTeam_t ncclTeamRail(ncclComm_t comm) {
  ncclTeam_t t = {0, 0, 0};
  struct ncclComm *c;
  if (team_comm(comm, &c)) {
    t = (ncclTeam_t){1, 0, c->nranks};
    emu_comm_release(c);
  }
  return t;
}
NCCL_ALIAS(ncclTeamRail);

int ncclTeamRankToWorld(ncclComm_t comm, ncclTeam_t team, int rank) {
  int world = -1;
  struct ncclComm *c;
  if (team_comm(comm, &c)) {
    world = c->rank + (rank - team.rank) * team.stride;
    emu_comm_release(c);
  }
  return world;
}
NCCL_ALIAS(ncclTeamRankToWorld);

int ncclTeamRankToLsa(ncclComm_t comm, ncclTeam_t team, int rank) {
  return ncclTeamRankToWorld(comm, team, rank);
}
NCCL_ALIAS(ncclTeamRankToLsa);

/* ---------------------------------------------------------------- requirements */

/* src/nccl_device/ll_a2a.cc */
int ncclLLA2ACalcSlots(int maxElts, int maxEltSize) { return maxElts * ((maxEltSize + 7) / 8); }
NCCL_ALIAS(ncclLLA2ACalcSlots);

/* Barriers and LL all-to-all buffers live in device memory a kernel uses: not emulated. */
#define NO_DEVICE_RESOURCES(fn)                                                                   \
  NCCL_KNOB(#fn);                                                                                 \
  emu_warn("NCCLEMU: %s is not emulated (no device kernels)", #fn);                               \
  return ncclInvalidUsage

ncclResult_t ncclLsaBarrierCreateRequirement(ncclTeam_t team, int nBarriers,
                                             ncclLsaBarrierHandle_t *outHandle,
                                             ncclDevResourceRequirements_t *outReq) {
  (void)team, (void)nBarriers, (void)outHandle, (void)outReq;
  NO_DEVICE_RESOURCES(ncclLsaBarrierCreateRequirement);
}
NCCL_ALIAS(ncclLsaBarrierCreateRequirement);

ncclResult_t ncclGinBarrierCreateRequirement(ncclComm_t comm, ncclTeam_t team, int nBarriers,
                                             ncclGinBarrierHandle_t *outHandle,
                                             ncclDevResourceRequirements_t *outReq) {
  (void)comm, (void)team, (void)nBarriers, (void)outHandle, (void)outReq;
  NO_DEVICE_RESOURCES(ncclGinBarrierCreateRequirement);
}
NCCL_ALIAS(ncclGinBarrierCreateRequirement);

ncclResult_t ncclLLA2ACreateRequirement(int nBlocks, int nSlots, ncclLLA2AHandle_t *outHandle,
                                        ncclDevResourceRequirements_t *outReq) {
  (void)nBlocks, (void)nSlots, (void)outHandle, (void)outReq;
  NO_DEVICE_RESOURCES(ncclLLA2ACreateRequirement);
}
NCCL_ALIAS(ncclLLA2ACreateRequirement);
