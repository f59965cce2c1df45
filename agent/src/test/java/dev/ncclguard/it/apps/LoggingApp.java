package dev.ncclguard.it.apps;

import org.slf4j.LoggerFactory;

/**
 * An application that logs through SLF4J from its start (so its logging is configured, and a
 * Logback {@code <shutdownHook/>} registered, before any NCCL call), then runs another test app:
 * {@code one-rank-leaks [rank]} (OneRankLeaksApp) or {@code exit-app SCENARIO} (ExitApp).
 */
public final class LoggingApp {
    private LoggingApp() {
    }

    public static void main(String[] args) throws Exception {
        LoggerFactory.getLogger("app").info("app started");
        String[] rest = java.util.Arrays.copyOfRange(args, 1, args.length);
        switch (args[0]) {
            case "one-rank-leaks" -> OneRankLeaksApp.main(rest);
            case "exit-app" -> ExitApp.main(rest);
            default -> throw new IllegalArgumentException("unknown app " + args[0]);
        }
    }
}
