package dev.ncclguard.samples.jna;

import com.sun.jna.Structure;

/** {@code ncclUniqueId}: 128 opaque bytes that let the ranks of one communicator find each other. */
@Structure.FieldOrder("internal")
public class NcclUniqueId extends Structure {
    public static final int BYTES = 128;

    public byte[] internal = new byte[BYTES];

    /** The same id, passed by value as ncclCommInitRank takes it. */
    public static class ByValue extends NcclUniqueId implements Structure.ByValue {
    }

    /** A by-value copy, so that each rank thread hands JNA its own instance. */
    public ByValue copyByValue() {
        ByValue copy = new ByValue();
        copy.internal = internal.clone();
        return copy;
    }
}
