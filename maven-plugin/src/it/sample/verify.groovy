// After both builds of invoker.properties: the leaky one failed through check, the clean one passed,
// and what it left in target/ncclguard is this build's alone.
def log = new File(basedir, 'build.log').text
def dir = new File(basedir, 'target/ncclguard')

assert log.contains('ncclguard check: FAILED') : 'the leaky build did not fail through check'
assert log =~ /LEAKS .*ncclguard-\d+-\d+\.json/ : 'check did not name the leaky report'
// check names the first frame of the project's own code: its binding's call of ncclCommInitAll
assert log =~ /leaked communicator 0x\p{XDigit}+ .*by ncclCommInitAll at sample\.Nccl\.communicator\(Nccl\.java:\d+\)/ :
        'check did not show where the leaked communicator was created'
assert log.contains('ncclguard check: OK') : 'the clean build did not pass check'
assert log.contains('suppressed') : 'the warm-up communicator was not listed as suppressed'
// the leaky build's two test JVMs (surefire's, failsafe's) left a JSON and a text report each
assert log.contains('removed 4 report file(s) of an earlier build') : 'prepare-agent kept the leaky build\'s reports'

def reports = dir.listFiles().findAll { it.name ==~ /ncclguard-\d+-\d+\.json/ }
assert reports.size() == 2 : "expected the reports of surefire's and failsafe's JVMs, found ${reports*.name}"
def texts = dir.listFiles().findAll { it.name ==~ /ncclguard-\d+-\d+\.txt/ }
assert texts*.name.collect { it - '.txt' }.sort() == reports*.name.collect { it - '.json' }.sort()

def html = new File(dir, 'merge.html')
assert html.isFile() : 'report wrote no merge page'
assert html.text.contains('</html>')
def merge = new File(dir, 'merge.txt').text
assert merge.contains('ncclguard merge:') : merge

def junit = new File(dir, 'ncclguard-check.xml')
assert junit.isFile() && junit.text.contains('<testsuite') : 'check wrote no JUnit XML'

// the installed agent POM: the shaded Byte Buddy and picocli are not dependencies of it
def poms = []
new File(localRepositoryPath, 'dev/ncclguard/ncclguard-agent').eachFileRecurse { if (it.name.endsWith('.pom')) poms << it }
assert poms.size() == 1 : "installed agent POMs: ${poms}"
def pom = poms[0].text
// its own dependencies only: a plugin's configuration in it may name Byte Buddy (the tests' app-libs)
def dependencies = new groovy.xml.XmlSlurper().parseText(pom).dependencies.dependency.artifactId*.text()
assert !dependencies.contains('byte-buddy') && !dependencies.contains('picocli') : "the installed agent POM lists a shaded dependency: ${dependencies}"
assert pom.contains('<licenses>') || pom.contains('<parent>')
return true
