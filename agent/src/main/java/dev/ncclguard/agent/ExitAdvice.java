package dev.ncclguard.agent;

import dev.ncclguard.bootstrap.Hooks;
import net.bytebuddy.asm.Advice;

/** Advice that tells the exit hook how the JVM is exiting, so exit-code never masks a failure. */
final class ExitAdvice {
    private ExitAdvice() {
    }

    /** On java.lang.Shutdown.exit(int): System.exit, Runtime.exit, and the signal handlers. */
    static final class Status {
        private Status() {
        }

        @Advice.OnMethodEnter(suppress = Throwable.class)
        static void enter(@Advice.Argument(0) int status) {
            Hooks.exiting(status);
        }
    }

    /** On ApplicationShutdownHooks.add(Thread): JFR's hook is kept back to run after the exit report. */
    static final class DeferJfrHook {
        private DeferJfrHook() {
        }

        @Advice.OnMethodEnter(skipOn = Advice.OnNonDefaultValue.class, suppress = Throwable.class)
        static boolean enter(@Advice.Argument(0) Thread hook) {
            return Hooks.deferShutdownHook(hook);
        }
    }

    /** On ThreadGroup.uncaughtException: the launcher exits 1 when main dies this way. */
    static final class Uncaught {
        private Uncaught() {
        }

        @Advice.OnMethodEnter(suppress = Throwable.class)
        static void enter(@Advice.Argument(0) Thread thread) {
            Hooks.uncaught(thread);
        }
    }
}
