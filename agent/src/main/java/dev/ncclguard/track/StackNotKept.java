package dev.ncclguard.track;

import java.util.List;

/**
 * The creating stack of an event or stream made at a new stack while stack-depot distinct stacks
 * were held by live handles ({@link CreationStacks}): no frames, and one line for the report in
 * their place. Captures nothing.
 */
public final class StackNotKept extends Throwable {
    private static final long serialVersionUID = 1L;

    private final transient List<String> lines;

    StackNotKept(int max) {
        super("creation stack not kept", null, false, false);
        this.lines = List.of(line(max));
    }

    /** What a report shows in place of the frames. */
    public List<String> lines() {
        return lines;
    }

    static String line(int max) {
        return "... not kept: " + max + " distinct creating stacks were live (stack-depot)";
    }
}
