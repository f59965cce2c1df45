package dev.ncclguard.samples;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;

/**
 * ncclDevCommRequirements_t as NCCL_DEV_COMM_REQUIREMENTS_INITIALIZER fills it, in the layout of
 * the running NCCL (nccl_device/core.h): 2.29 checks its size, magic and version header; 2.28.3
 * has no header and no initializer, only two list pointers, lsaMultimem and lsaBarrierCount.
 */
public final class DevCommRequirements {
    /** NCCL_API_MAGIC of nccl.h. */
    static final int NCCL_API_MAGIC = 0xcafebeef;
    private static final int SIZE_229 = 72;
    private static final int SIZE_228 = 24;
    private static final int GIN_CONTEXT_COUNT_229 = 60;

    private DevCommRequirements() {
    }

    /** The struct's bytes for NCCL of version code {@code ncclVersion} (ncclGetVersion, e.g. 22903). */
    public static byte[] bytes(int ncclVersion) {
        if (ncclVersion < 22900) {
            return new byte[SIZE_228];
        }
        ByteBuffer b = ByteBuffer.allocate(SIZE_229).order(ByteOrder.LITTLE_ENDIAN);
        b.putLong(0, SIZE_229);
        b.putInt(8, NCCL_API_MAGIC);
        b.putInt(12, ncclVersion);
        b.putInt(GIN_CONTEXT_COUNT_229, 4);
        return b.array();
    }
}
