package dev.ncclguard.emu;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.sun.jna.Library;
import com.sun.jna.Memory;
import com.sun.jna.Native;
import com.sun.jna.NativeLibrary;
import com.sun.jna.Pointer;
import com.sun.jna.Structure;
import com.sun.jna.ptr.IntByReference;
import com.sun.jna.ptr.PointerByReference;
import java.io.File;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * Loads the emulator the way a Java application loads NCCL and the CUDA runtime, through JNA
 * interface mapping, so the C ABI (a 128-byte unique id by value, size_t counts, opaque handles)
 * is proven from Java.
 */
class EmulatorJnaTest {

  /** The 128-byte ncclUniqueId; NCCL takes it by value in ncclCommInitRank. */
  @Structure.FieldOrder("internal")
  public static class NcclUniqueId extends Structure {
    public byte[] internal = new byte[128];

    public static class ByValue extends NcclUniqueId implements Structure.ByValue {}
  }

  interface Nccl extends Library {
    int ncclGetVersion(IntByReference version);

    int ncclGetUniqueId(NcclUniqueId uniqueId);

    int ncclCommInitRank(PointerByReference comm, int nranks, NcclUniqueId.ByValue commId, int rank);

    int ncclAllReduce(Pointer sendbuff, Pointer recvbuff, long count, int datatype, int op,
        Pointer comm, Pointer stream);

    int ncclCommCount(Pointer comm, IntByReference count);

    int ncclCommUserRank(Pointer comm, IntByReference rank);

    int ncclCommDestroy(Pointer comm);

    String ncclGetErrorString(int result);
  }

  interface Cudart extends Library {
    int cudaSetDevice(int device);

    int cudaStreamCreate(PointerByReference stream);

    int cudaStreamSynchronize(Pointer stream);

    int cudaStreamDestroy(Pointer stream);

    int cudaMalloc(PointerByReference devPtr, long size);

    int cudaMemcpy(Pointer dst, Pointer src, long count, int kind);

    int cudaFree(Pointer devPtr);
  }

  private static final int NCCL_FLOAT = 7;
  private static final int NCCL_SUM = 0;
  private static final int MEMCPY_HOST_TO_DEVICE = 1;
  private static final int MEMCPY_DEVICE_TO_HOST = 2;
  private static final int COUNT = 1024;

  private static Nccl nccl;
  private static Cudart cudart;
  private static ExecutorService ranks;

  @BeforeAll
  static void load() {
    nccl = Native.load("nccl", Nccl.class);
    cudart = Native.load("cudart", Cudart.class);
    ranks = Executors.newFixedThreadPool(2);
  }

  @AfterAll
  static void stop() {
    ranks.shutdownNow();
  }

  @Test
  void librariesComeFromTheEmulatorDirectory() throws Exception {
    File emu = new File(System.getProperty("jna.library.path")).getCanonicalFile();
    for (String name : new String[] {"nccl", "cudart"}) {
      File loaded = NativeLibrary.getInstance(name).getFile().getCanonicalFile();
      assertEquals(emu, loaded.getParentFile(), name + " loaded from " + loaded);
    }
  }

  @Test
  void versionIsNccl2283() {
    IntByReference version = new IntByReference();
    assertEquals(0, nccl.ncclGetVersion(version));
    assertEquals(22903, version.getValue());
    assertTrue(nccl.ncclGetErrorString(5).startsWith("invalid usage"));
  }

  @Test
  void twoRanksOnTwoThreadsAllReduceFloats() throws Exception {
    NcclUniqueId id = new NcclUniqueId();
    assertEquals(0, nccl.ncclGetUniqueId(id));
    List<Future<float[]>> results = new ArrayList<>();
    for (int rank = 0; rank < 2; rank++) {
      int r = rank;
      results.add(ranks.submit(() -> runRank(id.internal, r)));
    }
    float[] expected = new float[COUNT];
    for (int i = 0; i < COUNT; i++) {
      expected[i] = input(0, i) + input(1, i);
    }
    for (Future<float[]> result : results) {
      assertArrayEquals(expected, result.get(60, TimeUnit.SECONDS));
    }
  }

  private static float input(int rank, int i) {
    return (rank + 1) * 1000f + i;
  }

  private static float[] runRank(byte[] idBytes, int rank) {
    check(cudart.cudaSetDevice(rank), "cudaSetDevice");
    NcclUniqueId.ByValue id = new NcclUniqueId.ByValue();
    id.internal = idBytes.clone();
    PointerByReference commRef = new PointerByReference();
    check(nccl.ncclCommInitRank(commRef, 2, id, rank), "ncclCommInitRank");
    Pointer comm = commRef.getValue();
    IntByReference value = new IntByReference();
    check(nccl.ncclCommCount(comm, value), "ncclCommCount");
    assertEquals(2, value.getValue());
    check(nccl.ncclCommUserRank(comm, value), "ncclCommUserRank");
    assertEquals(rank, value.getValue());

    PointerByReference streamRef = new PointerByReference();
    check(cudart.cudaStreamCreate(streamRef), "cudaStreamCreate");
    Pointer stream = streamRef.getValue();
    long bytes = COUNT * 4L;
    PointerByReference sendRef = new PointerByReference();
    PointerByReference recvRef = new PointerByReference();
    check(cudart.cudaMalloc(sendRef, bytes), "cudaMalloc");
    check(cudart.cudaMalloc(recvRef, bytes), "cudaMalloc");
    Memory host = new Memory(bytes);
    for (int i = 0; i < COUNT; i++) {
      host.setFloat(i * 4L, input(rank, i));
    }
    check(cudart.cudaMemcpy(sendRef.getValue(), host, bytes, MEMCPY_HOST_TO_DEVICE), "cudaMemcpy");

    check(nccl.ncclAllReduce(sendRef.getValue(), recvRef.getValue(), COUNT, NCCL_FLOAT, NCCL_SUM,
        comm, stream), "ncclAllReduce");
    check(cudart.cudaStreamSynchronize(stream), "cudaStreamSynchronize");

    check(cudart.cudaMemcpy(host, recvRef.getValue(), bytes, MEMCPY_DEVICE_TO_HOST), "cudaMemcpy");
    float[] out = host.getFloatArray(0, COUNT);
    check(cudart.cudaFree(sendRef.getValue()), "cudaFree");
    check(cudart.cudaFree(recvRef.getValue()), "cudaFree");
    check(cudart.cudaStreamDestroy(stream), "cudaStreamDestroy");
    check(nccl.ncclCommDestroy(comm), "ncclCommDestroy");
    return out;
  }

  private static void check(int result, String call) {
    assertEquals(0, result, call + " returned " + result);
  }
}
