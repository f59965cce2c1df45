package dev.ncclguard.report;

import dev.ncclguard.cleanup.CleanupResult;
import dev.ncclguard.track.HandleView;
import dev.ncclguard.track.Kind;
import java.io.IOException;
import java.net.URISyntaxException;
import java.net.URL;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.CodeSource;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Collections;
import java.util.Comparator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.jar.Attributes;
import java.util.jar.JarFile;
import java.util.jar.Manifest;

/** The exit report, schema ncclguard-report/1: what the JSON and text writers print. */
public record Report(
        String schema,
        String agentVersion,
        long pid,
        String host,
        String action,
        Instant startedAt,
        Instant writtenAt,
        Summary summary,
        List<Leak> leaks) {

    public static final String SCHEMA = "ncclguard-report/1";
    public static final String ACTION_REPORT = "report";
    public static final String ACTION_CLEANUP = "cleanup";

    /** The report's {@code summary} object. */
    public record Summary(
            long commsCreated,
            long commsReleased,
            int leakedComms,
            int pendingEvents,
            int unsyncedStreams,
            int cleaned,
            int cleanupFailed) {
    }

    public boolean hasLeaks() {
        return !leaks.isEmpty();
    }

    public static Builder builder() {
        return new Builder();
    }

    /** Builds a report from the tracker's snapshot, the exit probe and the cleanup outcomes. */
    public static final class Builder {
        private String action = ACTION_REPORT;
        private Instant startedAt;
        private Instant writtenAt;
        private long commsCreated;
        private long commsReleased;
        private List<HandleView> leaks = List.of();
        private Map<HandleView, Boolean> stillPending = Map.of();
        private Map<HandleView, CleanupResult> cleanup = Map.of();
        private Long pid;
        private String host;
        private String agentVersion;

        private Builder() {
        }

        /** "report" or "cleanup" (action=off writes no report). */
        public Builder action(String action) {
            if (!ACTION_REPORT.equals(action) && !ACTION_CLEANUP.equals(action)) {
                throw new IllegalArgumentException("action must be report or cleanup, not " + action);
            }
            this.action = action;
            return this;
        }

        /** When the agent started watching. */
        public Builder startedAt(Instant startedAt) {
            this.startedAt = startedAt;
            return this;
        }

        /** Defaults to the moment {@link #build()} runs. */
        public Builder writtenAt(Instant writtenAt) {
            this.writtenAt = writtenAt;
            return this;
        }

        public Builder communicators(long created, long released) {
            this.commsCreated = created;
            this.commsReleased = released;
            return this;
        }

        public Builder leaks(List<HandleView> leaks) {
            this.leaks = List.copyOf(leaks);
            return this;
        }

        /** The exit probe's answer per event or stream: still in flight, or not; absent when unknown. */
        public Builder stillPending(Map<HandleView, Boolean> stillPending) {
            this.stillPending = Objects.requireNonNull(stillPending);
            return this;
        }

        /** Cleanup's outcome per leak (action=cleanup); a leak absent from it reads "none". */
        public Builder cleanup(Map<HandleView, CleanupResult> cleanup) {
            this.cleanup = Objects.requireNonNull(cleanup);
            return this;
        }

        public Builder pid(long pid) {
            this.pid = pid;
            return this;
        }

        public Builder host(String host) {
            this.host = host;
            return this;
        }

        public Builder agentVersion(String agentVersion) {
            this.agentVersion = agentVersion;
            return this;
        }

        /** Formats the creating stacks now: the only place they are ever formatted. */
        public Report build() {
            List<HandleView> ordered = new ArrayList<>(leaks);
            // Communicators first, then events, then streams, oldest first: stable across runs.
            ordered.sort(Comparator.comparing(HandleView::kind).thenComparingLong(HandleView::createdAtMillis));
            List<Leak> entries = new ArrayList<>(ordered.size());
            int comms = 0;
            int events = 0;
            int streams = 0;
            int cleaned = 0;
            int failed = 0;
            for (HandleView view : ordered) {
                CleanupResult result = ACTION_CLEANUP.equals(action) ? cleanup.get(view) : null;
                if (result == null) {
                    result = CleanupResult.NONE;
                }
                entries.add(leak(view, result));
                switch (view.kind()) {
                    case COMM -> comms++;
                    case EVENT -> events++;
                    case STREAM -> streams++;
                }
                if (result.outcome().cleaned()) {
                    cleaned++;
                } else if (result.outcome().unsuccessful()) {
                    failed++;
                }
            }
            Instant written = writtenAt != null ? writtenAt : Instant.now();
            return new Report(SCHEMA,
                    agentVersion != null ? agentVersion : Version.AGENT,
                    pid != null ? pid : ProcessHandle.current().pid(),
                    host != null ? host : HostName.get(),
                    action,
                    startedAt != null ? startedAt : written,
                    written,
                    new Summary(commsCreated, commsReleased, comms, events, streams, cleaned, failed),
                    Collections.unmodifiableList(entries));
        }

        private Leak leak(HandleView view, CleanupResult result) {
            Map<String, Object> details = new LinkedHashMap<>();
            if (view.details() != null) {
                details.putAll(view.details());
            }
            Boolean pending = view.kind() == Kind.COMM ? null : stillPending.get(view);
            if (pending != null) {
                details.put("stillPending", pending);
            } else {
                details.remove("stillPending");
            }
            String note = result.note(); // "none" has one when the application released it meanwhile
            return new Leak(view.kind(), view.hexHandle(), view.api(), view.bridge(), view.thread(),
                    Instant.ofEpochMilli(view.createdAtMillis()), StackFrames.format(view.creation()),
                    Collections.unmodifiableMap(details), result.outcome(), note);
        }
    }

    /** The agent's version from its jar's manifest, "dev" when run from classes (tests, IDE). */
    public static final class Version {
        public static final String AGENT = find();

        private Version() {
        }

        private static String find() {
            Package pkg = Report.class.getPackage();
            String version = pkg == null ? null : pkg.getImplementationVersion();
            if (version == null) {
                CodeSource source = Report.class.getProtectionDomain().getCodeSource();
                version = source == null ? null : fromJar(source.getLocation());
            }
            return version == null || version.isBlank() ? "dev" : version;
        }

        /** Implementation-Version of the jar at {@code location}, or null; a class loader may not define it on the package. */
        static String fromJar(URL location) {
            try {
                Path path = Path.of(location.toURI());
                if (!Files.isRegularFile(path)) {
                    return null;
                }
                try (JarFile jar = new JarFile(path.toFile())) {
                    Manifest manifest = jar.getManifest();
                    return manifest == null ? null
                            : manifest.getMainAttributes().getValue(Attributes.Name.IMPLEMENTATION_VERSION);
                }
            } catch (IOException | URISyntaxException | RuntimeException e) {
                return null;
            }
        }
    }
}
