package dev.ncclguard.maven;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.File;
import java.io.IOException;
import java.io.StringReader;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Properties;
import org.junit.jupiter.api.Test;

class AgentArgLineTest {
    private static final File JAR = new File("/repo/ncclguard-agent.jar");
    private static final File CONFIG = new File("/build/target/ncclguard/agent.properties");

    private static Properties read(String text) throws IOException {
        Properties p = new Properties();
        p.load(new StringReader(text));
        return p;
    }

    @Test
    void theAgentComesFirstAndTheUsersFlagsAreKept() {
        assertEquals("-javaagent:/repo/ncclguard-agent.jar=config=/build/target/ncclguard/agent.properties -Xmx1g -ea",
                AgentArgLine.prepend(" -Xmx1g -ea ", JAR, CONFIG));
    }

    @Test
    void withoutAPreviousValueTheAgentIsAlone() {
        assertEquals("-javaagent:/repo/ncclguard-agent.jar=config=/build/target/ncclguard/agent.properties",
                AgentArgLine.prepend(null, JAR, CONFIG));
    }

    @Test
    void aPathWithSpacesIsQuoted() {
        assertEquals("\"-javaagent:/my repo/ncclguard-agent.jar=config=/build/target/ncclguard/agent.properties\"",
                AgentArgLine.prepend("", new File("/my repo/ncclguard-agent.jar"), CONFIG));
    }

    @Test
    void eachTestJvmWritesItsReportsUnderANameOfItsOwn() throws IOException {
        Properties p = read(AgentArgLine.configFile(new File("/build/target/ncclguard"), Map.of(), null));
        assertEquals("/build/target/ncclguard/ncclguard-%p-%n.json", p.getProperty("report"));
        assertEquals("/build/target/ncclguard/ncclguard-%p-%n.txt", p.getProperty("text"));
        assertEquals(2, p.size());
    }

    @Test
    void theUsersOptionsAndSuppressionsGoIntoTheFileAndMayHoldCommasAndBackslashes() throws IOException {
        Map<String, String> options = new LinkedHashMap<>();
        options.put("action", "cleanup");
        options.put("text", "stderr");
        options.put("bindings", "/a,b\\c/ bindings.txt");
        Properties p = read(AgentArgLine.configFile(new File("/t"), options, new File("/s/known.supp")));
        assertEquals("cleanup", p.getProperty("action"));
        assertEquals("stderr", p.getProperty("text"));
        assertEquals("/a,b\\c/ bindings.txt", p.getProperty("bindings"));
        assertEquals("/s/known.supp", p.getProperty("suppress"));
        assertTrue(p.getProperty("report").endsWith("ncclguard-%p-%n.json"));
    }

    @Test
    void aValueStartingWithSpaceOrHoldingLineBreaksSurvives() throws IOException {
        Properties p = read(AgentArgLine.configFile(new File("/t"), Map.of("bindings", " /x\ny=z"), null));
        assertEquals(" /x\ny=z", p.getProperty("bindings"));
    }

    /** mvn -Dncclguard.text=none verify: the test JVM gets it as a system property, above the options file. */
    @Test
    void optionsFromMavensCommandLineGoOnTheTestJvmsCommandLine() {
        Properties user = new Properties();
        user.setProperty("ncclguard.text", "none");
        user.setProperty("ncclguard.report", "/my reports/r.json");
        user.setProperty("ncclguard.skip", "false");
        user.setProperty("ncclguard.junit.agent", "optional");
        user.setProperty("ncclguard.it.outerRepository", "/m2");
        user.setProperty("other", "x");
        assertEquals(java.util.List.of("\"-Dncclguard.report=/my reports/r.json\"", "-Dncclguard.text=none"),
                AgentArgLine.commandLineOptions(user));
    }
}
