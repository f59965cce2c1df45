// After the three builds of invoker.properties (own argLine, leaky, clean).
def log = new File(basedir, 'build.log').text
def dir = new File(basedir, 'target/ncclguard')

// 2: the emulator came by coordinates, and the leak failed the build through check
assert log =~ /ncclguard: emulator dev\.ncclguard:ncclguard-emulator:jar:linux-x86_64:\S+ unpacked into \S+ncclguard-emulator/ :
        'prepare-agent did not unpack the emulator'
assert log =~ /LEAKS .*ncclguard-\d+-\d+\.json/ : 'check did not name the leaky report'
assert log =~ /leaked communicator 0x\p{XDigit}+ .*by ncclCommInitAll at consumer\.CommunicatorTest/ :
        'check did not show where the leaked communicator was created'
assert log.contains('ncclguard check: FAILED: 1 report, 1 with leaks')
// 3: the clean build passed, and -Dncclguard.text=none beat the plugin's text= (its config file)
assert log.contains('ncclguard check: OK: 1 report, no leaks') : 'the clean build did not pass check'
assert !log.contains('is no option and is ignored') : 'a plugin parameter reached the test JVM as a stray option'
// 1: tests ran without the agent: check failed with the fix, never "nothing to check"
assert log =~ /ncclguard check: FAILED: 1 test class ran \(\S+surefire-reports\) but no test JVM wrote a report/ :
        'a build whose tests ran without the agent did not fail'
assert log.contains("ncclguard: maven-surefire-plugin's <argLine>-Xmx256m</argLine> replaces the agent that"
        + " prepare-agent put in the property argLine: write <argLine>@{argLine} -Xmx256m</argLine>")
def json = dir.listFiles().findAll { it.name ==~ /ncclguard-\d+-\d+\.json/ }
assert json.size() == 1 : "expected the clean build's report, found ${json*.name}"
def texts = dir.listFiles().findAll { it.name.endsWith('.txt') }
assert texts.isEmpty() : "-Dncclguard.text=none did not override the plugin's text=: ${texts*.name}"
return true
