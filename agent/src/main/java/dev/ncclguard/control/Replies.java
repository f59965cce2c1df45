package dev.ncclguard.control;

import java.lang.instrument.Instrumentation;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.Set;

/**
 * Answers the attach and dump commands through the JVM's agent properties, which the command
 * reads back over the same attach connection (VirtualMachine.getAgentProperties): no file, no
 * socket, and nothing the application sees in its system properties.
 */
final class Replies {
    static final String PREFIX = "ncclguard.reply.";
    /** Replies kept for commands that have not read theirs yet; older ones are dropped. */
    private static final int KEEP = 4;

    private Replies() {
    }

    static void put(Instrumentation inst, String nonce, String text) throws ReflectiveOperationException {
        Module base = Object.class.getModule();
        Module agent = Replies.class.getModule();
        if (!base.isExported("jdk.internal.vm", agent)) {
            inst.redefineModule(base, Set.of(), Map.of("jdk.internal.vm", Set.of(agent)), Map.of(), Set.of(), Map.of());
        }
        Properties props = (Properties) Class.forName("jdk.internal.vm.VMSupport").getMethod("getAgentProperties")
                .invoke(null);
        synchronized (props) {
            List<String> old = new ArrayList<>();
            for (String name : props.stringPropertyNames()) {
                if (name.startsWith(PREFIX)) {
                    old.add(name);
                }
            }
            // nonces start with the time, so their names sort oldest first
            old.sort(null);
            for (int i = 0; i < old.size() - (KEEP - 1); i++) {
                props.remove(old.get(i));
            }
            props.setProperty(PREFIX + nonce, text);
        }
    }
}
