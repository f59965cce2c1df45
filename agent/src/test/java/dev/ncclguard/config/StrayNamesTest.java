package dev.ncclguard.config;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

class StrayNamesTest {
    @Test
    void aMistypedPropertyGetsOneLineNamingTheClosestKey() {
        assertEquals(List.of("system property ncclguard.exitcode is no option and is ignored; did you mean"
                + " ncclguard.exit-code?"), StrayNames.warnings(Map.of("ncclguard.exitcode", "3"), Map.of()));
    }

    @Test
    void aMistypedVariableGetsOneLineNamingTheClosestVariable() {
        assertEquals(List.of("environment variable NCCLGUARD_EXITCODE is no option and is ignored; did you mean"
                + " NCCLGUARD_EXIT_CODE?"), StrayNames.warnings(Map.of(), Map.of("NCCLGUARD_EXITCODE", "3")));
    }

    @Test
    void aNameFarFromEveryKeyListsTheValidOnes() {
        List<String> lines = StrayNames.warnings(Map.of("ncclguard.verbose", "on"), Map.of());
        assertEquals(1, lines.size());
        assertTrue(lines.get(0).contains("(valid: ncclguard.action, ncclguard.report"), lines.get(0));
    }

    @Test
    void validKeysAndTheProjectsOtherNamesAreQuiet() {
        assertEquals(List.of(), StrayNames.warnings(
                Map.of("ncclguard.exit-code", "3", "ncclguard.emu", "/x", "ncclguard.installed", "premain",
                        "ncclguard.junit.agent", "optional", "user.dir", "/"),
                Map.of("NCCLGUARD_EXIT_CODE", "3", "NCCLGUARD_EMU", "/x", "PATH", "/bin")));
    }

    /** NCCLGUARD_NATIVE_DEBUG=1 and the native part's other variables: read by C, not ignored. */
    @Test
    void theNativePartsOwnVariablesAreQuiet() {
        assertEquals(List.of(), StrayNames.warnings(Map.of(), Map.of("NCCLGUARD_NATIVE_DEBUG", "1",
                "NCCLGUARD_NATIVE_MEMO", "off", "NCCLGUARD_USER_PROFILER_PLUGIN", "/x/libp.so",
                "NCCLGUARD_PROF_MASK", "6", "NCCLGUARD_TEST_RECORD_STORE", "1")));
    }

    /** mvn -Dncclguard.allowNoReports=true verify: surefire hands it to the test JVM, which must stay quiet. */
    @Test
    void theMavenPluginsParametersAreQuietInTheTestJvms() {
        assertEquals(List.of(), StrayNames.warnings(Map.of("ncclguard.skip", "false", "ncclguard.allowNoReports", "true",
                "ncclguard.emulator", "true", "ncclguard.emulator.dir", "/b/target/ncclguard-emulator",
                "ncclguard.haltOnFailure", "false"), Map.of()));
    }
}
