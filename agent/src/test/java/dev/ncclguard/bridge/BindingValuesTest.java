package dev.ncclguard.bridge;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;

import com.sun.jna.Memory;
import com.sun.jna.Pointer;
import com.sun.jna.PointerType;
import com.sun.jna.Structure;
import com.sun.jna.ptr.IntByReference;
import com.sun.jna.ptr.LongByReference;
import com.sun.jna.ptr.PointerByReference;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.LongBuffer;
import java.util.List;
import org.junit.jupiter.api.Test;

class BindingValuesTest {
    /** ncclUniqueId as bindings declare it: a 128-byte struct passed by value. */
    public static class UniqueId extends Structure implements Structure.ByValue {
        public byte[] internal = new byte[128];

        @Override
        protected List<String> getFieldOrder() {
            return List.of("internal");
        }
    }

    /** A typed handle, as some bindings declare ncclComm_t. */
    public static class Comm extends PointerType {
        public Comm() {
        }

        public Comm(Pointer p) {
            super(p);
        }
    }

    @Test
    void handleByValueIsReadFromPointerPointerTypeAndNumber() {
        assertEquals(0x1234L, BindingValues.handle(new Pointer(0x1234L)));
        assertEquals(0x5678L, BindingValues.handle(new Comm(new Pointer(0x5678L))));
        assertEquals(42L, BindingValues.handle(42L));
        assertEquals(0L, BindingValues.handle(null));
        assertEquals(0L, BindingValues.handle(new Comm()));
    }

    @Test
    void outParameterIsReadFromEveryByReferenceForm() {
        PointerByReference pref = new PointerByReference(new Pointer(0xabcL));
        assertEquals(0xabcL, BindingValues.handleOut(pref, 0));
        assertEquals(0xdefL, BindingValues.handleOut(new LongByReference(0xdefL), 0));
        Memory memory = new Memory(16);
        memory.setLong(0, 0x111L);
        memory.setLong(8, 0x222L);
        assertEquals(0x111L, BindingValues.handleOut(memory, 0));
        assertEquals(0x222L, BindingValues.handleOut(memory, 1));
    }

    @Test
    void outArraysOfHandlesAreReadPerElement() {
        assertEquals(7L, BindingValues.handleOut(new long[] {5L, 7L}, 1));
        assertEquals(0x99L, BindingValues.handleOut(new Pointer[] {null, new Pointer(0x99L)}, 1));
        assertEquals(0L, BindingValues.handleOut(new long[] {5L}, 3));
        ByteBuffer direct = ByteBuffer.allocateDirect(16).order(ByteOrder.nativeOrder());
        direct.putLong(8, 0x77L);
        assertEquals(0x77L, BindingValues.handleOut(direct, 1));
        assertEquals(0x66L, BindingValues.handleOut(LongBuffer.wrap(new long[] {0x66L}), 0));
    }

    @Test
    void intsAndIntArraysAreRead() {
        assertEquals(3, BindingValues.intAt(3, 0, -1));
        assertEquals(9, BindingValues.intAt(new int[] {8, 9}, 1, -1));
        assertEquals(-1, BindingValues.intAt(null, 0, -1));
        Memory devlist = new Memory(8);
        devlist.setInt(4, 6);
        assertEquals(6, BindingValues.intAt(devlist, 1, -1));
        assertEquals(5, BindingValues.intAt(new IntByReference(5), 0, -1));
    }

    @Test
    void uniqueIdBytesAreReadFromStructureByValueArrayAndPointer() {
        UniqueId id = new UniqueId();
        for (int i = 0; i < 128; i++) {
            id.internal[i] = (byte) i;
        }
        id.write(); // JNA writes a by-value struct before the call, as here
        byte[] expected = id.internal.clone();
        assertArrayEquals(expected, BindingValues.bytes(id, 128));
        assertArrayEquals(expected, BindingValues.bytes(expected.clone(), 128));
        assertArrayEquals(expected, BindingValues.bytes(id.getPointer(), 128));
        assertNull(BindingValues.bytes(new byte[4], 128));
    }

    @Test
    void unreadableArgumentsAnswerZeroInsteadOfThrowing() {
        assertEquals(0L, BindingValues.handle("not a handle"));
        assertEquals(0L, BindingValues.handleOut(new PointerByReference(), 0));
        assertNull(BindingValues.bytes(new Object(), 128));
    }

    @Test
    void jnaArgumentsAreReadThroughTheClassGeneratedInJnasPackage() {
        for (Class<?> type : new Class<?>[] {Pointer.class, Memory.class, Comm.class, PointerByReference.class,
                IntByReference.class, UniqueId.class}) {
            assertEquals(BindingValues.GeneratedPointerReader.class, BindingValues.readerOf(type).getClass(), type.getName());
        }
    }

    @Test
    void methodHandleReaderStillReadsWhereNoClassCanBeGenerated() throws Throwable {
        BindingValues.Reader pointers = BindingValues.PointerReader.of(Pointer.class, null);
        Memory memory = new Memory(16);
        memory.setLong(8, 0x222L);
        memory.setInt(0, 6);
        assertEquals(Pointer.nativeValue(memory), pointers.handle(memory));
        assertEquals(0x222L, pointers.longAt(memory, 1));
        assertEquals(6, pointers.intAt(memory, 0, -1));
        BindingValues.Reader holders = BindingValues.PointerReader.of(Pointer.class, PointerType.class);
        assertEquals(0xabcL, holders.longAt(new PointerByReference(new Pointer(0xabcL)), 0));
        assertEquals(0x5678L, holders.handle(new Comm(new Pointer(0x5678L))));
        UniqueId id = new UniqueId();
        id.internal[3] = 9;
        id.write();
        assertEquals(9, BindingValues.PointerReader.of(Pointer.class, Structure.class).bytes(id, 128)[3]);
    }

    @Test
    void statusIsTheReturnedInt() {
        assertEquals(0, BindingValues.status(0));
        assertEquals(600, BindingValues.status(600));
        assertEquals(0, BindingValues.status(null));
    }
}
