package dev.ncclguard.weave;

import java.lang.reflect.Method;
import java.util.Map;

/** The members of JNA's Function that HookWeaver relies on, for a woven copy the tests can run. */
public class FakeFunction {
    public String functionName = "cudaEventQuery";
    public com.sun.jna.NativeLibrary library;

    public FakeFunction() {
    }

    public Object invoke(Method invokingMethod, Class<?>[] paramTypes, Class<?> returnType, Object[] inArgs,
            Map<String, ?> options) {
        if (inArgs == null) {
            throw new IllegalStateException("no arguments");
        }
        return "ran with " + inArgs.length;
    }
}
