package dev.ncclguard.report;

import java.net.InetAddress;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;

/**
 * The machine's name for the report. Read from the kernel first: at exit a resolver lookup
 * (InetAddress.getLocalHost) can stall for seconds on a node with broken DNS.
 */
public final class HostName {
    private HostName() {
    }

    public static String get() {
        try {
            Path kernel = Path.of("/proc/sys/kernel/hostname");
            if (Files.isReadable(kernel)) {
                String name = new String(Files.readAllBytes(kernel), StandardCharsets.UTF_8).trim();
                if (!name.isEmpty()) {
                    return name;
                }
            }
        } catch (Exception e) {
            // Not Linux, or /proc is not mounted: the other sources follow.
        }
        for (String variable : new String[] {"HOSTNAME", "COMPUTERNAME"}) {
            String name = System.getenv(variable);
            if (name != null && !name.isBlank()) {
                return name.trim();
            }
        }
        try {
            return InetAddress.getLocalHost().getHostName();
        } catch (Exception e) {
            return "unknown";
        }
    }
}
