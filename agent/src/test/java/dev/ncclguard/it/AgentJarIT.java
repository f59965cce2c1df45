package dev.ncclguard.it;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.ncclguard.testkit.ChildJvm;
import java.io.IOException;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.jar.Attributes;
import java.util.jar.JarEntry;
import java.util.jar.JarFile;
import java.util.jar.Manifest;
import java.util.zip.ZipEntry;
import java.util.zip.ZipFile;
import org.junit.jupiter.api.Test;

/**
 * What the published agent jar holds (issue 18): the agent's own classes in its layout (entry and
 * bootstrap as classes, the rest under inst/ as .classdata), Byte Buddy's ASM and picocli only
 * relocated, the licences of all three, the manifest's attributes, and nothing else: no stray file
 * (META-INF/jpms.args), no unrelocated dependency class or resource. Beside it: the sources and
 * javadoc jars, and a dependency-reduced POM without the shaded dependencies.
 */
class AgentJarIT {
    private static final Path TARGET = ChildJvm.AGENT_JAR.getParent();

    /** Where each entry of the jar may be; anything else is a leak or a stray file. */
    static List<String> problems(List<String> entries) {
        List<String> out = new ArrayList<>();
        for (String name : entries) {
            if (name.endsWith("/")) {
                continue; // directories
            }
            boolean allowed = name.equals("META-INF/MANIFEST.MF") || name.equals("META-INF/LICENSE")
                    || name.equals("META-INF/NOTICE") || name.equals("META-INF/licenses/ASM")
                    || name.equals("META-INF/licenses/picocli")
                    || name.equals("META-INF/maven/dev.ncclguard/ncclguard-agent/pom.xml")
                    || name.equals("META-INF/maven/dev.ncclguard/ncclguard-agent/pom.properties")
                    || (name.startsWith("dev/ncclguard/entry/") || name.startsWith("dev/ncclguard/bootstrap/"))
                            && name.endsWith(".class")
                    || name.startsWith("inst/dev/ncclguard/") && name.endsWith(".classdata")
                            && !name.startsWith("inst/dev/ncclguard/entry/") && !name.startsWith("inst/dev/ncclguard/bootstrap/")
                    || (name.startsWith("inst/ncclguard-native/linux-x86_64/")
                            || name.startsWith("inst/ncclguard-native/linux-aarch64/")) && name.endsWith(".so");
            if (!allowed) {
                out.add(name);
            }
        }
        return out;
    }

    private static List<String> entries(Path jar) throws IOException {
        try (ZipFile zip = new ZipFile(jar.toFile())) {
            return Collections.list(zip.entries()).stream().map(ZipEntry::getName).toList();
        }
    }

    private static String read(Path jar, String entry) throws IOException {
        try (JarFile j = new JarFile(jar.toFile())) {
            JarEntry e = j.getJarEntry(entry);
            assertTrue(e != null, entry + " is not in " + jar);
            try (InputStream in = j.getInputStream(e)) {
                return new String(in.readAllBytes(), StandardCharsets.UTF_8);
            }
        }
    }

    @Test
    void theAgentJarHoldsOnlyTheAgentItsRelocatedLibrariesAndTheirLicences() throws IOException {
        assertEquals(List.of(), problems(entries(ChildJvm.AGENT_JAR)));
    }

    @Test
    void aLeakedDependencyOrAStrayFileIsAProblem() {
        assertEquals(List.of("META-INF/jpms.args", "net/bytebuddy/jar/asm/ClassReader.class",
                "inst/net/bytebuddy/jar/asm/ClassReader.classdata", "inst/picocli/CommandLine.classdata",
                "dev/ncclguard/cli/Cli.class", "META-INF/versions/9/module-info.class"),
                problems(List.of("META-INF/", "META-INF/jpms.args", "net/bytebuddy/jar/asm/ClassReader.class",
                        "inst/net/bytebuddy/jar/asm/ClassReader.classdata", "inst/picocli/CommandLine.classdata",
                        "dev/ncclguard/cli/Cli.class", "META-INF/versions/9/module-info.class",
                        "inst/dev/ncclguard/shaded/picocli/CommandLine.classdata")));
    }

    @Test
    void asmAndPicocliAreInsideOnlyRelocated() throws IOException {
        List<String> names = entries(ChildJvm.AGENT_JAR);
        assertTrue(names.contains("inst/dev/ncclguard/shaded/bytebuddy/jar/asm/ClassReader.classdata"));
        assertTrue(names.contains("inst/dev/ncclguard/shaded/picocli/CommandLine.classdata"));
    }

    @Test
    void theManifestNamesEveryEntryPointAndTheModuleName() throws IOException {
        try (JarFile jar = new JarFile(ChildJvm.AGENT_JAR.toFile())) {
            Manifest m = jar.getManifest();
            Attributes a = m.getMainAttributes();
            assertEquals("dev.ncclguard.entry.AgentLoader", a.getValue("Premain-Class"));
            assertEquals("dev.ncclguard.entry.AgentLoader", a.getValue("Agent-Class"));
            assertEquals("dev.ncclguard.entry.AgentLoader", a.getValue("Main-Class"));
            assertEquals("true", a.getValue("Can-Redefine-Classes"));
            assertEquals("true", a.getValue("Can-Retransform-Classes"));
            assertEquals("true", a.getValue("Can-Set-Native-Method-Prefix"));
            assertEquals("dev.ncclguard.agent", a.getValue("Automatic-Module-Name"));
            assertEquals("ncclguard", a.getValue("Implementation-Title"));
            assertTrue(a.getValue("Implementation-Version") != null);
        }
    }

    @Test
    void theLicencesOfTheAgentAsmAndPicocliAreKept() throws IOException {
        assertTrue(read(ChildJvm.AGENT_JAR, "META-INF/LICENSE").contains("Apache License"));
        assertTrue(read(ChildJvm.AGENT_JAR, "META-INF/LICENSE").contains("Version 2.0, January 2004"));
        String asm = read(ChildJvm.AGENT_JAR, "META-INF/licenses/ASM");
        assertTrue(asm.contains("INRIA") && asm.contains("Redistribution and use in source and binary forms"), asm);
        assertTrue(read(ChildJvm.AGENT_JAR, "META-INF/licenses/picocli").contains("Remko Popma"));
        String notice = read(ChildJvm.AGENT_JAR, "META-INF/NOTICE");
        assertTrue(notice.contains("Rafael Winterhalter") && notice.contains("picocli"), notice);
    }

    @Test
    void theJarsPomAndTheDependencyReducedPomListNoShadedDependency() throws IOException {
        String inJar = read(ChildJvm.AGENT_JAR, "META-INF/maven/dev.ncclguard/ncclguard-agent/pom.xml");
        String reduced = Files.readString(TARGET.resolve("dependency-reduced-pom.xml"));
        for (String pom : List.of(inJar, reduced)) {
            List<String> dependencies = dependencies(pom);
            assertTrue(!dependencies.contains("byte-buddy") && !dependencies.contains("picocli"), dependencies.toString());
        }
    }

    /** The artifactIds of a POM's own dependencies (not those a plugin's configuration names). */
    static List<String> dependencies(String pom) throws IOException {
        try {
            var factory = javax.xml.parsers.DocumentBuilderFactory.newInstance();
            var doc = factory.newDocumentBuilder().parse(new java.io.ByteArrayInputStream(pom.getBytes(StandardCharsets.UTF_8)));
            var nodes = (org.w3c.dom.NodeList) javax.xml.xpath.XPathFactory.newInstance().newXPath().evaluate(
                    "/*[local-name()='project']/*[local-name()='dependencies']/*[local-name()='dependency']/*[local-name()='artifactId']",
                    doc, javax.xml.xpath.XPathConstants.NODESET);
            List<String> out = new ArrayList<>();
            for (int i = 0; i < nodes.getLength(); i++) {
                out.add(nodes.item(i).getTextContent().strip());
            }
            return out;
        } catch (javax.xml.parsers.ParserConfigurationException | org.xml.sax.SAXException
                | javax.xml.xpath.XPathExpressionException e) {
            throw new IOException("not a POM: " + e, e);
        }
    }

    @Test
    void aPomThatListsByteBuddyAsADependencyIsCaught() throws IOException {
        assertEquals(List.of("byte-buddy"), dependencies("<project xmlns='http://maven.apache.org/POM/4.0.0'><dependencies>"
                + "<dependency><artifactId>byte-buddy</artifactId></dependency></dependencies></project>"));
    }

    @Test
    void sourcesAndJavadocJarsAreMade() throws IOException {
        assertTrue(entries(TARGET.resolve("ncclguard-agent-sources.jar")).contains("dev/ncclguard/cli/Cli.java"));
        assertTrue(entries(TARGET.resolve("ncclguard-agent-javadoc.jar")).contains("index.html"));
        assertTrue(entries(TARGET.resolve("ncclguard-agent-sources.jar")).contains("META-INF/LICENSE"));
    }
}
