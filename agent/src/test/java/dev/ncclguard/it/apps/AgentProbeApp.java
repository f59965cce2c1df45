package dev.ncclguard.it.apps;

import java.lang.reflect.Method;

/**
 * Looks, as a library would, for what a -javaagent might have put in the application's reach:
 * the JDK-internal packages (as Netty probes for jdk.internal.misc.Unsafe) and the agent's own
 * classes. Prints one line per probe, then makes tracked calls (RawFunctionApp), so the same run
 * shows that the agent still works.
 */
public final class AgentProbeApp {
    private AgentProbeApp() {
    }

    public static void main(String[] args) throws Exception {
        Module base = Object.class.getModule();
        Module mine = AgentProbeApp.class.getModule();
        System.out.println("exported jdk.internal.misc: " + base.isExported("jdk.internal.misc", mine));
        System.out.println("exported jdk.internal.access: " + base.isExported("jdk.internal.access", mine));
        System.out.println("Unsafe.getUnsafe: " + unsafe());
        for (String name : new String[] {"dev.ncclguard.track.Tracker", "dev.ncclguard.agent.Installer",
            "dev.ncclguard.cli.Cli", "dev.ncclguard.shaded.bytebuddy.jar.asm.ClassReader"}) {
            System.out.println("load " + name + ": " + load(name));
        }
        System.out.println("load dev.ncclguard.bootstrap.Live: " + load("dev.ncclguard.bootstrap.Live"));
        RawFunctionApp.main(new String[] {"return"});
    }

    private static String unsafe() {
        try {
            Class<?> type = Class.forName("jdk.internal.misc.Unsafe");
            Method get = type.getMethod("getUnsafe");
            Object unsafe = get.invoke(null);
            return "reached " + unsafe.getClass().getName();
        } catch (IllegalAccessException e) {
            return "refused";
        } catch (ReflectiveOperationException | RuntimeException | LinkageError e) {
            return "failed " + e;
        }
    }

    private static String load(String name) {
        try {
            Class<?> c = Class.forName(name, false, ClassLoader.getSystemClassLoader());
            return "loaded by " + c.getClassLoader();
        } catch (ClassNotFoundException e) {
            return "not found";
        } catch (LinkageError e) {
            return "failed " + e;
        }
    }
}
