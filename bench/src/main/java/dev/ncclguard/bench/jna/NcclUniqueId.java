package dev.ncclguard.bench.jna;

import com.sun.jna.Structure;

/** {@code ncclUniqueId}: 128 opaque bytes, passed by value to ncclCommInitRank. */
@Structure.FieldOrder("internal")
public class NcclUniqueId extends Structure {
    public byte[] internal = new byte[128];

    public static class ByValue extends NcclUniqueId implements Structure.ByValue {
    }

    public ByValue copyByValue() {
        ByValue copy = new ByValue();
        copy.internal = internal.clone();
        return copy;
    }
}
