package dev.ncclguard.config;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.time.Duration;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

class OptionsTest {
    private static final Map<String, String> NONE = Map.of();

    private static Options parse(String args) {
        return Options.parse(args, NONE, NONE);
    }

    private static String error(String args, Map<String, String> props, Map<String, String> env) {
        return assertThrows(OptionsException.class, () -> Options.parse(args, props, env)).getMessage();
    }

    private static String error(String args) {
        return error(args, NONE, NONE);
    }

    @Test
    void defaultsMatchTheSpec() {
        Options o = parse("");
        assertEquals(Options.Action.REPORT, o.action());
        assertNull(o.report());
        assertNull(o.reportPath(1, "h"));
        assertEquals("stderr", o.text());
        assertTrue(o.textToStderr());
        assertEquals(0, o.exitCode());
        assertTrue(o.stacks());
        assertEquals(Duration.ofSeconds(10), o.timeout());
        assertEquals(Options.Logging.STDERR, o.logging());
        assertEquals("default", o.source("stacks"));
    }

    @Test
    void nullArgumentsAreLikeEmpty() {
        assertEquals(Options.Action.REPORT, Options.parse(null, null, null).action());
    }

    @Test
    void everyKeyIsReadFromTheArgumentString() {
        Options o = parse("action=cleanup,report=/tmp/r-%p.json,text=none,exit-code=3,stacks=off,timeout=500ms,"
                + "logging=application,log-level=info,bindings=/tmp/b.txt,pending-threshold=2m");
        assertEquals(Options.Action.CLEANUP, o.action());
        assertEquals("/tmp/r-%p.json", o.report());
        assertEquals("none", o.text());
        assertFalse(o.textToStderr());
        assertNull(o.textPath(1, "h"));
        assertEquals(3, o.exitCode());
        assertFalse(o.stacks());
        assertEquals(Duration.ofMillis(500), o.timeout());
        assertEquals(Options.Logging.APPLICATION, o.logging());
        assertEquals("/tmp/b.txt", o.bindings());
        assertEquals(Duration.ofMinutes(2), o.pendingThreshold());
        assertEquals("action=cleanup,report=/tmp/r-%p.json,text=none,exit-code=3,stacks=off,timeout=500ms,"
                + "logging=application,log-level=info,bindings=/tmp/b.txt,suppress=none,pending-threshold=120000ms,native=on,native-patch=on,nccl-profiler=on,native-dir=tmpdir,stack-depot=65536", o.toString());
    }

    @Test
    void argumentBeatsSystemPropertyBeatsEnvironmentBeatsDefault() {
        Map<String, String> props = Map.of("ncclguard.stacks", "off", "ncclguard.exit-code", "4");
        Map<String, String> env = Map.of("NCCLGUARD_STACKS", "on", "NCCLGUARD_EXIT_CODE", "5",
                "NCCLGUARD_ACTION", "off");
        Options o = Options.parse("stacks=on", props, env);
        assertTrue(o.stacks());
        assertEquals("argument", o.source("stacks"));
        assertEquals(4, o.exitCode());
        assertEquals("system property ncclguard.exit-code", o.source("exit-code"));
        assertEquals(Options.Action.OFF, o.action());
        assertEquals("environment variable NCCLGUARD_ACTION", o.source("action"));
        assertEquals(Duration.ofSeconds(10), o.timeout());
    }

    @Test
    void environmentNamesAreUpperCaseWithUnderscores() {
        assertEquals("NCCLGUARD_EXIT_CODE", Options.environmentName("exit-code"));
        assertEquals(7, Options.parse("", NONE, Map.of("NCCLGUARD_EXIT_CODE", "7")).exitCode());
    }

    @Test
    void emptySystemPropertyOrVariableCountsAsUnset() {
        Options o = Options.parse("", Map.of("ncclguard.stacks", ""), Map.of("NCCLGUARD_STACKS", "off"));
        assertFalse(o.stacks());
    }

    @Test
    void aKeyGivenTwiceTakesItsLastValue() {
        assertFalse(parse("stacks=on,stacks=off").stacks());
    }

    @Test
    void emptyPiecesAreIgnored() {
        assertEquals(2, parse(",exit-code=2,,").exitCode());
    }

    @Test
    void badValueNamesKeyValueAndChoices() {
        assertEquals("ncclguard: invalid value 'sometimes' for option stacks: expected on or off",
                error("stacks=sometimes"));
    }

    @Test
    void unknownKeyListsTheValidOnes() {
        assertEquals("ncclguard: unknown option 'stack' (did you mean stacks? valid: action, report, text, exit-code, "
                + "stacks, timeout, logging, log-level, bindings, suppress, pending-threshold, native, native-patch, nccl-profiler, native-dir, stack-depot, config)", error("stack=on"));
    }

    @Test
    void unknownKeyNamesTheClosestValidOne() {
        assertTrue(error("exitcode=3").contains("did you mean exit-code?"), error("exitcode=3"));
        assertTrue(error("Time-Out=1s").contains("did you mean timeout?"), error("Time-Out=1s"));
        assertFalse(error("verbose=on").contains("did you mean"), error("verbose=on"));
    }

    @Test
    void timeoutAboveADayIsRefusedWithOneLine() {
        assertEquals("ncclguard: invalid value '3000000h' for option timeout: expected a duration from 1ms to 24h"
                + " such as 500ms, 10s or 2m", error("timeout=3000000h"));
        assertTrue(error("timeout=1441m").contains("from 1ms to 24h"));
        assertTrue(error("timeout=86400001ms").contains("from 1ms to 24h"));
    }

    @Test
    void timeoutOfExactlyADayIsAccepted() {
        assertEquals(Duration.ofHours(24), parse("timeout=24h").timeout());
        assertEquals(Duration.ofHours(24), parse("timeout=86400s").timeout());
    }

    @ParameterizedTest(name = "{0}")
    @CsvSource(delimiter = '|', value = {
        "action=delete       | ncclguard: invalid value 'delete' for option action: expected report, cleanup or off",
        "action=REPORT       | ncclguard: invalid value 'REPORT' for option action: expected report, cleanup or off",
        "report=             | ncclguard: invalid value '' for option report: expected none or a file path (it may hold %p, %h, %t, %{NAME}, %n or %n{MAX})",
        "text=               | ncclguard: invalid value '' for option text: expected stderr, log, none or a file path (it may hold %p, %h, %t, %{NAME}, %n or %n{MAX})",
        "exit-code=256       | ncclguard: invalid value '256' for option exit-code: expected an integer from 0 to 255",
        "exit-code=-1        | ncclguard: invalid value '-1' for option exit-code: expected an integer from 0 to 255",
        "exit-code=two       | ncclguard: invalid value 'two' for option exit-code: expected an integer from 0 to 255",
        "stacks=yes          | ncclguard: invalid value 'yes' for option stacks: expected on or off",
        "timeout=0s          | ncclguard: invalid value '0s' for option timeout: expected a duration from 1ms to 24h such as 500ms, 10s or 2m",
        "timeout=10          | ncclguard: invalid value '10' for option timeout: expected a duration from 1ms to 24h such as 500ms, 10s or 2m",
        "timeout=-5s         | ncclguard: invalid value '-5s' for option timeout: expected a duration from 1ms to 24h such as 500ms, 10s or 2m",
        "timeout=1.5s        | ncclguard: invalid value '1.5s' for option timeout: expected a duration from 1ms to 24h such as 500ms, 10s or 2m",
        "timeout=99999999999999s | ncclguard: invalid value '99999999999999s' for option timeout: expected a duration from 1ms to 24h such as 500ms, 10s or 2m",
        "logging=slf4j       | ncclguard: invalid value 'slf4j' for option logging: expected stderr or application",
        "stacks              | ncclguard: missing value for option stacks: expected on or off",
        "verbose             | ncclguard: unknown option 'verbose' (valid: action, report, text, exit-code, stacks, timeout, logging, log-level, bindings, suppress, pending-threshold, native, native-patch, nccl-profiler, native-dir, stack-depot, config)",
        "=on                 | ncclguard: unknown option '' (valid: action, report, text, exit-code, stacks, timeout, logging, log-level, bindings, suppress, pending-threshold, native, native-patch, nccl-profiler, native-dir, stack-depot, config)",
    })
    void everyBadInputFailsWithItsOneLine(String args, String message) {
        assertEquals(message, error(args));
    }

    @Test
    void aBadValueFromASystemPropertyOrVariableSaysWhereItCameFrom() {
        assertEquals("ncclguard: invalid value 'x' for option stacks (system property ncclguard.stacks): "
                + "expected on or off", error("", Map.of("ncclguard.stacks", "x"), NONE));
        assertEquals("ncclguard: invalid value '2x' for option timeout (environment variable NCCLGUARD_TIMEOUT): "
                + "expected a duration from 1ms to 24h such as 500ms, 10s or 2m",
                error("", NONE, Map.of("NCCLGUARD_TIMEOUT", "2x")));
    }

    @Test
    void aBadValueOverriddenByAnArgumentIsNotAnError() {
        assertTrue(Options.parse("stacks=on", Map.of("ncclguard.stacks", "x"), NONE).stacks());
    }

    @Test
    void theErrorIsAlwaysOneLine() {
        String message = error("", NONE, Map.of("NCCLGUARD_ACTION", "report\ncleanup\r\u0007"));
        assertFalse(message.contains("\n") || message.contains("\r"), message);
        assertEquals("ncclguard: invalid value 'report\\ncleanup\\r\\u0007' for option action "
                + "(environment variable NCCLGUARD_ACTION): expected report, cleanup or off", message);
    }

    @Test
    void valuesCannotHoldACommaSinceItSeparatesArguments() {
        assertEquals("ncclguard: unknown option 'b.json' (valid: action, report, text, exit-code, stacks, timeout, "
                + "logging, log-level, bindings, suppress, pending-threshold, native, native-patch, nccl-profiler, native-dir, stack-depot, config)", error("report=/tmp/a,b.json"));
    }

    @Test
    void valuesMayHoldEqualsSigns() {
        assertEquals("/tmp/a=b.json", parse("report=/tmp/a=b.json").report());
    }

    @ParameterizedTest(name = "{0}")
    @CsvSource({"500ms, 500", "10s, 10000", "2m, 120000", "1h, 3600000", "1ms, 1"})
    void durationsTakeAUnit(String text, long millis) {
        assertEquals(Duration.ofMillis(millis), parse("timeout=" + text).timeout());
    }

    @Test
    void exitCodeBoundsAreAccepted() {
        assertEquals(0, parse("exit-code=0").exitCode());
        assertEquals(255, parse("exit-code=255").exitCode());
    }

    @Test
    void reportNoneMeansNoReport() {
        assertNull(Options.parse("report=none", NONE, Map.of("NCCLGUARD_REPORT", "/tmp/x")).report());
    }

    @Test
    void textLogSendsTheReportToTheApplicationsLoggingNotToAFileNamedLog() {
        Options o = parse("text=log");
        assertTrue(o.textToLog());
        assertFalse(o.textToStderr());
        assertNull(o.textPath(4242, "node7"));
    }

    @Test
    void reportPathExpandsPidAndHost() {
        Options o = parse("report=/tmp/%h/ncclguard-%p.json,text=/tmp/%p.txt");
        assertEquals("/tmp/node7/ncclguard-4242.json", o.reportPath(4242, "node7"));
        assertEquals("/tmp/4242.txt", o.textPath(4242, "node7"));
    }

    @Test
    void expandLeavesOtherPercentsAndTakesDoublePercentAsOne() {
        assertEquals("a%x-50%-1%", Options.expand("a%x-50%%-%p%", 1, "h"));
    }

    @Test
    void keysAreListedInDocumentationOrder() {
        assertEquals(List.of("action", "report", "text", "exit-code", "stacks", "timeout", "logging", "log-level", "bindings",
                "suppress", "pending-threshold", "native", "native-patch", "nccl-profiler", "native-dir", "stack-depot", "config"), Options.keys());
    }

    @Test
    void theNativePartIsOnByDefaultAndExtractsUnderTheTemporaryDirectory() {
        Options o = Options.parse("", Map.of(), Map.of());
        assertEquals(true, o.nativeInterposer());
        assertEquals(true, o.ncclProfiler());
        assertEquals(null, o.nativeDir());
    }

    @Test
    void theNativeOptionsReadTheirEnvironmentVariables() {
        Options o = Options.parse("", Map.of(), Map.of("NCCLGUARD_NATIVE", "off", "NCCLGUARD_NCCL_PROFILER", "off",
                "NCCLGUARD_NATIVE_DIR", "/var/tmp/ng"));
        assertEquals(false, o.nativeInterposer());
        assertEquals(false, o.ncclProfiler());
        assertEquals("/var/tmp/ng", o.nativeDir());
    }

    @Test
    void theStackDepotBoundsDefaultsTo65536AndTakesZeroToTurnItOff() {
        assertEquals(65536L, Options.parse("", Map.of(), Map.of()).stackDepot());
        assertEquals(0L, Options.parse("stack-depot=0", Map.of(), Map.of()).stackDepot());
        assertEquals(1_000_000L, Options.parse("", Map.of(), Map.of("NCCLGUARD_STACK_DEPOT", "1000000")).stackDepot());
        OptionsException e = assertThrows(OptionsException.class, () -> Options.parse("stack-depot=-1", Map.of(), Map.of()));
        assertEquals("ncclguard: invalid value '-1' for option stack-depot: expected an integer from 0 (off) to 16777216",
                e.getMessage());
        assertThrows(OptionsException.class, () -> Options.parse("stack-depot=16777217", Map.of(), Map.of()));
    }

    @Test
    void aBadNativeValueNamesTheChoices() {
        OptionsException e = assertThrows(OptionsException.class, () -> Options.parse("native=maybe", Map.of(), Map.of()));
        assertEquals("ncclguard: invalid value 'maybe' for option native: expected on or off", e.getMessage());
    }

    @Test
    void theConvenienceOverloadReadsThisJvmsSystemProperties() {
        String previous = System.getProperty("ncclguard.exit-code");
        System.setProperty("ncclguard.exit-code", "9");
        try {
            assertEquals(9, Options.parse("").exitCode());
            assertEquals(8, Options.parse("exit-code=8").exitCode());
        } finally {
            if (previous == null) {
                System.clearProperty("ncclguard.exit-code");
            } else {
                System.setProperty("ncclguard.exit-code", previous);
            }
        }
    }
}
