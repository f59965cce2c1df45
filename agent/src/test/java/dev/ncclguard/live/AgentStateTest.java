package dev.ncclguard.live;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.ncclguard.config.Options;
import dev.ncclguard.config.OptionsException;
import dev.ncclguard.track.Tracker;
import java.time.Duration;
import java.util.Map;
import org.junit.jupiter.api.Test;

/** A second attach changes options of the running agent. */
class AgentStateTest {
    private final AgentState state = new AgentState(new Tracker(),
            Options.parse("report=/tmp/r-%p.json,timeout=2s", Map.of(), Map.of()), null, Map.of(), java.util.List.of());

    @Test
    void keysNotGivenKeepTheirValues() {
        Options merged = state.merge("action=cleanup");
        assertEquals(Options.Action.CLEANUP, merged.action());
        assertEquals("/tmp/r-%p.json", merged.report());
        assertEquals(Duration.ofSeconds(2), merged.timeout());
    }

    @Test
    void noArgumentsChangeNothing() {
        assertEquals(state.options().toString(), state.merge("").toString());
        assertEquals(state.options().toString(), state.merge(null).toString());
    }

    @Test
    void badOptionFailsWithItsLineAndChangesNothing() {
        OptionsException e = assertThrows(OptionsException.class, () -> state.merge("stacks=sometimes"));
        assertTrue(e.getMessage().contains("sometimes") && e.getMessage().contains("stacks"), e.getMessage());
        assertEquals(Options.Action.REPORT, state.options().action());
    }

    @Test
    void updatePutsTheOptionsInEffectForTheExitHook() {
        state.update(state.merge("action=off,exit-code=3"));
        assertEquals(Options.Action.OFF, state.options().action());
        assertEquals(3, state.options().exitCode());
    }
}
