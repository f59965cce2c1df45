package dev.ncclguard.bridge;

import dev.ncclguard.bootstrap.Hooks;
import net.bytebuddy.asm.Advice;

/**
 * Inlined into {@code com.sun.jna.Function.invoke(Method, Class[], Class, Object[], Map)}, where
 * interface-mapped and raw Function calls of every JNA 5.x meet. Untracked symbols cost one map
 * lookup and allocate nothing. Only {@link Hooks} may be referenced here: this code runs inside
 * JNA's class loader.
 */
public final class JnaFunctionAdvice {
    private JnaFunctionAdvice() {
    }

    @Advice.OnMethodEnter(suppress = Throwable.class)
    static Object enter(@Advice.FieldValue("functionName") String symbol,
                        @Advice.Argument(3) Object[] args,
                        @Advice.Local("ncclguardToken") long token) {
        Object fn = Hooks.jnaLookup(symbol);
        if (fn != null) {
            token = Hooks.jnaEnter(fn, args);
        }
        return fn;
    }

    @Advice.OnMethodExit(suppress = Throwable.class)
    static void exit(@Advice.Enter Object fn,
                     @Advice.FieldValue("library") Object library,
                     @Advice.Argument(3) Object[] args,
                     @Advice.Return Object result,
                     @Advice.Local("ncclguardToken") long token) {
        if (fn != null) {
            Hooks.jnaExit(fn, library, args, result, token);
        }
    }
}
