package dev.ncclguard.config;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.time.Instant;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

class OutputNamesTest {
    private static final Map<String, String> ENV = Map.of("RANK", "3", "SLURM_PROCID", "17");

    private static String expand(String template, long number) {
        return OutputNames.expand(template, 4242, "node7", "20261129T194004Z", ENV, number);
    }

    @Test
    void pidHostAndStartTimeAreExpanded() {
        assertEquals("/r/node7-4242-20261129T194004Z.json", expand("/r/%h-%p-%t.json", 0));
    }

    @Test
    void anEnvironmentVariableIsExpandedByName() {
        assertEquals("rank-3-of-slurm-17.json", expand("rank-%{RANK}-of-slurm-%{SLURM_PROCID}.json", 0));
    }

    @Test
    void anUnsetEnvironmentVariableExpandsToNothing() {
        assertEquals("rank-.json", expand("rank-%{LOCAL_RANK}.json", 0));
    }

    @Test
    void plainNumberIsTheNumberGiven() {
        assertEquals("r-12.json", expand("r-%n.json", 12));
    }

    @Test
    void numberWithMaxWrapsAtMax() {
        assertEquals("r-2.json", expand("r-%n{5}.json", 12));
        assertEquals(5, OutputNames.max("r-%n{5}.json"));
    }

    @Test
    void aPlainNumberHasNoMax() {
        assertEquals(0, OutputNames.max("r-%p-%n.json"));
        assertTrue(OutputNames.numbered("r-%p-%n.json"));
    }

    @Test
    void aTemplateWithoutNumberIsNotNumbered() {
        assertEquals(-1, OutputNames.max("r-%p-%{n}-%%n.json"));
        assertFalse(OutputNames.numbered("r-%p-%%n.json"));
    }

    @Test
    void doublePercentIsOnePercentAndOtherPercentsStay() {
        assertEquals("a%x-50%-4242%", expand("a%x-50%%-%p%", 0));
    }

    @Test
    void startTimeIsUtcInIsoBasicFormat() {
        assertEquals("20261129T194004Z", OutputNames.startTime(Instant.parse("2026-11-29T19:40:04.314Z").toEpochMilli()));
        assertEquals("19700101T000000Z", OutputNames.startTime(0));
        assertEquals("20240229T235959Z", OutputNames.startTime(Instant.parse("2024-02-29T23:59:59.999Z").toEpochMilli()));
        assertEquals("21000301T000000Z", OutputNames.startTime(Instant.parse("2100-03-01T00:00:00Z").toEpochMilli()));
    }

    @Test
    void validTemplatesHaveNoProblem() {
        assertNull(OutputNames.problem("/r/%h-%p-%t-%{RANK}-%n{100}-%n-%%-%x.json"));
    }

    @ParameterizedTest(name = "{0}")
    @CsvSource(delimiter = '|', value = {
        "r-%{RANK.json     | '%{' without its closing '}'",
        "r-%{}.json        | '%{}' does not name an environment variable (letters, digits and '_', not starting with a digit)",
        "r-%{1RANK}.json   | '%{1RANK}' does not name an environment variable (letters, digits and '_', not starting with a digit)",
        "r-%{RA-NK}.json   | '%{RA-NK}' does not name an environment variable (letters, digits and '_', not starting with a digit)",
        "r-%n{0}.json      | '%n{' takes a number of files from 1 to 1000000 and a closing '}'",
        "r-%n{x}.json      | '%n{' takes a number of files from 1 to 1000000 and a closing '}'",
        "r-%n{5.json       | '%n{' takes a number of files from 1 to 1000000 and a closing '}'",
        "r-%n{1000001}.json | '%n{' takes a number of files from 1 to 1000000 and a closing '}'",
    })
    void aBadPlaceholderIsNamed(String template, String problem) {
        assertEquals(problem, OutputNames.problem(template));
    }

    @Test
    void aBadPlaceholderStopsTheOptionWithItsProblem() {
        OptionsException e = assertThrows(OptionsException.class,
                () -> Options.parse("report=r-%{RANK.json", Map.of(), Map.of()));
        assertEquals("ncclguard: invalid value 'r-%{RANK.json' for option report: '%{' without its closing '}'; "
                + "expected none or a file path (it may hold %p, %h, %t, %{NAME}, %n or %n{MAX})", e.getMessage());
    }

    @Test
    void theTextOptionTakesTheSamePlaceholders() {
        assertEquals("/tmp/t-%{RANK}-%n{4}.txt", Options.parse("text=/tmp/t-%{RANK}-%n{4}.txt", Map.of(), Map.of()).text());
        assertThrows(OptionsException.class, () -> Options.parse("text=/tmp/t-%n{0}.txt", Map.of(), Map.of()));
    }
}
