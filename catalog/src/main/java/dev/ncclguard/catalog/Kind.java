package dev.ncclguard.catalog;

/**
 * What a tracked handle is, in the words of the report's {@code kind} field, and the words every
 * report and command says a leak of it in: the text report's titles and advice, the counts of its
 * summary line and of the commands, the summary's field. {@code devcomm} and {@code memory} are
 * additions to the contract's kinds (docs/spec.md): device communicators (ncclDevCommCreate) and
 * ncclMemAlloc's memory.
 */
public enum Kind {
    COMM("comm", "leaked communicator", "leaked communicators", "leakedComms",
            "destroy it with ncclCommDestroy before exit, or ncclCommAbort on error paths."),
    EVENT("event", "pending event", "pending events", "pendingEvents",
            "synchronize it (cudaEventSynchronize) before exit."),
    STREAM("stream", "unsynchronized stream", "unsynchronized streams", "unsyncedStreams",
            "cudaStreamSynchronize it before exit."),
    DEVCOMM("devcomm", "leaked device communicator", "leaked device communicators", "leakedDevComms",
            "destroy it with ncclDevCommDestroy before its communicator is destroyed."),
    MEMORY("memory", "unfreed NCCL allocation", "unfreed NCCL allocations", "leakedMemory",
            "free it with ncclMemFree once no communicator uses it (deregister it first).");

    private final String word;
    private final String one;
    private final String many;
    private final String summaryField;
    private final String advice;

    Kind(String word, String one, String many, String summaryField, String advice) {
        this.word = word;
        this.one = one;
        this.many = many;
        this.summaryField = summaryField;
        this.advice = advice;
    }

    /** The report's {@code kind}: comm, event, stream, devcomm, memory. */
    public String word() {
        return word;
    }

    /** The kind of a report's {@code kind} word; null for a word no kind has. */
    public static Kind of(String word) {
        for (Kind k : values()) {
            if (k.word.equals(word)) {
                return k;
            }
        }
        return null;
    }

    /** A leak of this kind named before its handle: "leaked communicator", "unfreed NCCL memory". */
    public String title() {
        return this == MEMORY ? "unfreed NCCL memory" : one;
    }

    /** {@link #title} as a heading: "Leaked communicator". */
    public String heading() {
        String t = title();
        return Character.toUpperCase(t.charAt(0)) + t.substring(1);
    }

    /** The leaks counted: "pending event" for 1, "pending events" otherwise. */
    public String plural(long n) {
        return n == 1 ? one : many;
    }

    /** "1 leaked communicator", "2 unfreed NCCL allocations". */
    public String count(long n) {
        return n + " " + plural(n);
    }

    /** The report summary's count of these leaks (json.ReportSchema.Summary's field of that name). */
    public String summaryField() {
        return summaryField;
    }

    /** What the application must do about such a leak, a sentence after "What to do: ". */
    public String advice() {
        return advice;
    }
}
