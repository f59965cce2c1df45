package dev.ncclguard.bridge;

import dev.ncclguard.bootstrap.Hooks;
import net.bytebuddy.asm.Advice;
import net.bytebuddy.implementation.bytecode.assign.Assigner;

/**
 * Advice inlined into the JDK's java.lang.foreign implementation (JDK 22+). Only {@link Hooks}
 * may be referenced here: this code runs inside java.base.
 */
public final class FfmAdvice {
    private FfmAdvice() {
    }

    /**
     * On {@code jdk.internal.loader.NativeLibrary.find(String)} in its two implementations, which
     * every SymbolLookup (libraryLookup, loaderLookup) ends in: remembers where symbols are.
     */
    public static final class Symbol {
        private Symbol() {
        }

        @Advice.OnMethodExit(suppress = Throwable.class)
        static void exit(@Advice.Argument(0) String name, @Advice.Return long address) {
            if (address != 0L) {
                Hooks.ffmSymbol(name, address);
            }
        }
    }

    /** On {@code Linker.downcallHandle(MemorySegment, FunctionDescriptor, Option...)}: may wrap the handle. */
    public static final class Downcall {
        private Downcall() {
        }

        @Advice.OnMethodExit(suppress = Throwable.class)
        static void exit(@Advice.Argument(0) Object symbol,
                         @Advice.Return(readOnly = false, typing = Assigner.Typing.DYNAMIC) Object handle) {
            handle = Hooks.ffmDowncall(handle, symbol);
        }
    }
}
