package dev.ncclguard.report;

import dev.ncclguard.catalog.Kind;
import dev.ncclguard.cleanup.LeakOutcome;
import dev.ncclguard.cleanup.Outcome;
import dev.ncclguard.config.Suppressions;
import dev.ncclguard.json.ReportSchema.Summary;
import dev.ncclguard.json.ReportSchema;
import dev.ncclguard.track.CommLife;
import dev.ncclguard.track.HandleView;
import java.io.IOException;
import java.net.URISyntaxException;
import java.net.URL;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.CodeSource;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collections;
import java.util.Comparator;
import java.util.IdentityHashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.jar.Attributes;
import java.util.jar.JarFile;
import java.util.jar.Manifest;

/**
 * The exit report, schema ncclguard-report/1: what the JSON and text writers print. A live report
 * ({@code live}: a dump of a running JVM) lists what would be leaks if the JVM exited now.
 *
 * @param suppressed           leaks matched by a suppression (option suppress), not counted
 * @param communicators        every communicator seen, released or not, oldest first
 * @param communicatorsOmitted released communicators left out of {@code communicators} to bound
 *                             the agent's memory
 * @param attachedAt           when the agent was attached to the running JVM; null when it started with it
 * @param beforeAttach         what the agent learned of the handles that existed before it was attached;
 *                             null when it started with the JVM
 * @param suppressedCallers    the calling libraries whose NCCL and CUDA calls the native part left out
 *                             (suppression lines library:NAME); empty without them
 */
public record Report(
        String schema,
        String agentVersion,
        long pid,
        String host,
        String action,
        Instant startedAt,
        Instant writtenAt,
        Summary summary,
        List<Leak> leaks,
        List<Suppressed> suppressed,
        List<Communicator> communicators,
        long communicatorsOmitted,
        boolean live,
        Instant attachedAt,
        BeforeAttach beforeAttach,
        List<String> suppressedCallers) {

    public static final String SCHEMA = ReportSchema.NAME;
    public static final String ACTION_REPORT = "report";
    public static final String ACTION_CLEANUP = "cleanup";

    /** A leak that a suppression rule accepted: listed, not counted. */
    public record Suppressed(Leak leak, String rule) {
    }

    /**
     * One entry of the report's {@code communicators}: every communicator the agent saw, so that
     * the reports of a job's ranks show which rank released it and which did not.
     *
     * @param rank       null when unknown (split children)
     * @param nranks     null when unknown
     * @param commId     null when unknown
     * @param releaseStartedAt when the application's destroy or abort was called (also one still in
     *                   flight at exit); null when none was seen
     * @param releasedAt null while the application never released it
     * @param releasedBy ncclCommDestroy or ncclCommAbort; null while the application never released it
     * @param leaked     alive when the report was made
     * @param suppressed leaked, and accepted by a suppression
     * @param cleanup    for a leaked one, what cleanup did
     */
    public record Communicator(
            String commId,
            Integer rank,
            Integer nranks,
            int device,
            String handle,
            String api,
            String thread,
            Instant createdAt,
            Instant releaseStartedAt,
            Instant releasedAt,
            String releasedBy,
            boolean leaked,
            boolean suppressed,
            Outcome cleanup) {
    }

    public boolean hasLeaks() {
        return !leaks.isEmpty();
    }

    /**
     * What NCCL's RAS service said, at the attach, about the communicators that already existed
     * (handles created before the attach are otherwise unknown to the agent).
     *
     * @param ras            "answered", "unavailable" (nothing listened) or "failed" (it answered
     *                       something the agent could not read)
     * @param communicators  communicators RAS knew of in the whole NCCL job, or null
     * @param ranksHere      ranks of those communicators in this process, or null when RAS's
     *                       answer does not say (its text format)
     * @param note           one sentence: what was asked where, and what was learned
     */
    public record BeforeAttach(String ras, Integer communicators, Integer ranksHere, String note) {
        public static final String ANSWERED = "answered";
        public static final String UNAVAILABLE = "unavailable";
        public static final String FAILED = "failed";

        public BeforeAttach {
            Objects.requireNonNull(ras, "ras");
            Objects.requireNonNull(note, "note");
        }
    }

    public static Builder builder() {
        return new Builder();
    }

    /** Builds a report from the tracker's snapshot, the exit probe and the cleanup outcomes. */
    public static final class Builder {
        private static final Object NO_RULE = new Object();
        private String action = ACTION_REPORT;
        private Instant startedAt;
        private Instant writtenAt;
        private long commsCreated;
        private long commsReleased;
        private List<HandleView> leaks = List.of();
        private Map<HandleView, Boolean> stillPending = Map.of();
        private Map<HandleView, LeakOutcome> cleanup = Map.of();
        private Long pid;
        private String host;
        private String agentVersion;
        private Suppressions suppressions = Suppressions.NONE;
        private List<CommLife> communicators = List.of();
        private long communicatorsOmitted;
        private boolean live;
        private Instant attachedAt;
        private BeforeAttach beforeAttach;

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
        public Builder cleanup(Map<HandleView, LeakOutcome> cleanup) {
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

        /** Leaks these rules match are listed as suppressed and not counted. */
        public Builder suppressions(Suppressions suppressions) {
            this.suppressions = Objects.requireNonNull(suppressions);
            return this;
        }

        /** Every communicator seen (Tracker.communicators()), and how many were left out. */
        public Builder communicators(List<CommLife> communicators, long omitted) {
            this.communicators = List.copyOf(communicators);
            this.communicatorsOmitted = omitted;
            return this;
        }

        /** A dump of a running JVM rather than the exit report. */
        public Builder live(boolean live) {
            this.live = live;
            return this;
        }

        /** When the agent was attached to the running JVM, and what it learned then; null: it started with the JVM. */
        public Builder attached(Instant attachedAt, BeforeAttach beforeAttach) {
            this.attachedAt = attachedAt;
            this.beforeAttach = beforeAttach;
            return this;
        }

        /** Formats the creating stacks now: the only place they are ever formatted. */
        public Report build() {
            // Communicators first, then events, streams, device communicators and memory, oldest first: stable across runs.
            List<HandleView> ordered = sortNearlyOrdered(leaks);
            Entries e = new Entries(ordered.size());
            for (HandleView view : ordered) {
                e.add(view); // the work per leak in a method of its own: compiled after a few hundred, not 60,000
            }
            Instant written = writtenAt != null ? writtenAt : Instant.now();
            return new Report(SCHEMA,
                    agentVersion != null ? agentVersion : Version.AGENT,
                    pid != null ? pid : ProcessHandle.current().pid(),
                    host != null ? host : HostName.get(),
                    action,
                    startedAt != null ? startedAt : written,
                    written,
                    new Summary(commsCreated, commsReleased, e.comms, e.events, e.streams, e.cleaned, e.failed,
                            e.suppressed.size(), e.devComms, e.memory),
                    Collections.unmodifiableList(e.leaks),
                    Collections.unmodifiableList(e.suppressed),
                    communicatorEntries(e.leakedComms, e.suppressedComms),
                    communicatorsOmitted,
                    live, attachedAt, beforeAttach, suppressions.libraries());
        }

        /**
         * Per kind, the rule each distinct stack matched, or {@link #NO_RULE}: leaks made at one place
         * share one stack list, matched once. Null without rules.
         */
        @SuppressWarnings("unchecked")
        private Map<List<String>, Object>[] ruleCache() {
            if (suppressions.isEmpty()) {
                return null;
            }
            Map<List<String>, Object>[] byKind = new Map[Kind.values().length];
            for (int i = 0; i < byKind.length; i++) {
                byKind[i] = new IdentityHashMap<>();
            }
            return byKind;
        }

        /** The report's leaks and suppressed leaks as they are sorted out, and their counts. */
        private final class Entries {
            final List<Leak> leaks;
            final List<Suppressed> suppressed = new ArrayList<>();
            final Map<String, Suppressed> suppressedComms = new LinkedHashMap<>();
            final Map<String, Leak> leakedComms = new LinkedHashMap<>();
            final StackFrames.Cache stacks = new StackFrames.Cache();
            final Map<List<String>, Object>[] rules = ruleCache();
            final boolean cleanupRan = ACTION_CLEANUP.equals(action);
            int comms;
            int events;
            int streams;
            int devComms;
            int memory;
            int cleaned;
            int failed;

            Entries(int size) {
                leaks = new ArrayList<>(size);
            }

            void add(HandleView view) {
                LeakOutcome result = cleanupRan ? cleanup.get(view) : null;
                if (result == null) {
                    result = LeakOutcome.NONE;
                }
                Leak leak = leak(view, result, stacks);
                Suppressions.Rule rule = rules == null ? null : matched(rules[view.kind().ordinal()], leak);
                if (view.kind() == Kind.COMM) {
                    leakedComms.put(identity(view.hexHandle(), view.createdAtMillis()), leak);
                }
                if (rule != null) {
                    Suppressed s = new Suppressed(leak, rule.text());
                    suppressed.add(s);
                    if (view.kind() == Kind.COMM) {
                        suppressedComms.put(identity(view.hexHandle(), view.createdAtMillis()), s);
                    }
                    return;
                }
                leaks.add(leak);
                switch (view.kind()) {
                    case COMM -> comms++;
                    case EVENT -> events++;
                    case STREAM -> streams++;
                    case DEVCOMM -> devComms++;
                    case MEMORY -> memory++;
                }
                if (result.outcome().cleaned()) {
                    cleaned++;
                } else if (result.outcome().unsuccessful()) {
                    failed++;
                }
            }
        }

        private Suppressions.Rule matched(Map<List<String>, Object> known, Leak leak) {
            Object rule = known.get(leak.stack());
            if (rule == null) {
                rule = suppressions.match(leak.kind(), leak.stack());
                known.put(leak.stack(), rule == null ? NO_RULE : rule);
            }
            return rule == NO_RULE ? null : (Suppressions.Rule) rule;
        }

        private List<Communicator> communicatorEntries(Map<String, Leak> leaked, Map<String, Suppressed> suppressed) {
            List<Communicator> out = new ArrayList<>(communicators.size());
            for (CommLife c : communicators) {
                String id = identity(c.hexHandle(), c.createdAtMillis());
                Leak leak = c.released() ? null : leaked.get(id);
                out.add(new Communicator(c.commId(), c.rank() >= 0 ? c.rank() : null,
                        c.nranks() >= 0 ? c.nranks() : null, c.device(), c.hexHandle(), c.api(), c.thread(),
                        Instant.ofEpochMilli(c.createdAtMillis()),
                        c.releaseStartedAtMillis() != 0 ? Instant.ofEpochMilli(c.releaseStartedAtMillis()) : null,
                        c.released() ? Instant.ofEpochMilli(c.releasedAtMillis()) : null, c.releasedBy(),
                        !c.released(), !c.released() && suppressed.containsKey(id),
                        c.released() ? null : leak != null ? leak.cleanup() : Outcome.NONE));
            }
            return Collections.unmodifiableList(out);
        }

        /**
         * The views in report order. The tracker's snapshot is in creation order, which is that order
         * but for the odd pair of handles made in the same millisecond on two threads: an insertion
         * sort with a budget puts those right in a linear pass of simple code (this runs once, at
         * exit, mostly interpreted, where a comparator sort of 100,000 views costs hundreds of
         * milliseconds), and hands anything more shuffled to a real sort.
         */
        static List<HandleView> sortNearlyOrdered(List<HandleView> views) {
            HandleView[] a = views.toArray(new HandleView[0]);
            int budget = a.length + 1024;
            for (int i = 1; i < a.length; i++) {
                HandleView x = a[i];
                int j = i - 1;
                while (j >= 0 && before(x, a[j])) {
                    a[j + 1] = a[j];
                    j--;
                    if (--budget < 0) {
                        List<HandleView> sorted = new ArrayList<>(views);
                        sorted.sort(Comparator.comparing(HandleView::kind).thenComparingLong(HandleView::createdAtMillis));
                        return sorted;
                    }
                }
                a[j + 1] = x;
            }
            return Arrays.asList(a);
        }

        private static boolean before(HandleView x, HandleView y) {
            int byKind = x.kind().ordinal() - y.kind().ordinal();
            return byKind < 0 || byKind == 0 && x.createdAtMillis() < y.createdAtMillis();
        }

        /** A handle at one creation time: an address the library handed out again is another one. */
        private static String identity(String handle, long createdAtMillis) {
            return handle + "@" + createdAtMillis;
        }

        private Leak leak(HandleView view, LeakOutcome result, StackFrames.Cache stacks) {
            Boolean pending = view.kind() == Kind.EVENT || view.kind() == Kind.STREAM ? stillPending.get(view) : null;
            // "none" has a note when the application released it meanwhile
            return new Leak(view, stacks.format(view.creation()), pending, result.outcome(), result.note());
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
