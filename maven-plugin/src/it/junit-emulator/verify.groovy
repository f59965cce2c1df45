// After the two builds of invoker.properties (leaky, clean).
def log = new File(basedir, 'build.log').text
def dir = new File(basedir, 'target/ncclguard-emulator')

// the emulator came from the test class path, said in one line
assert log =~ /ncclguard: emulator of NCCL and CUDA from ncclguard-emulator-\S+-linux-x86_64\.jar unpacked into \S+ncclguard-emulator \(\d+ files\), first in jna\.library\.path/ :
        'the extension did not put the emulator under the test JVM'
assert new File(dir, 'libnccl.so.2').isFile() && new File(dir, 'libcudart.so.13').isFile()
// 1: the leak failed its test through the extension, with the creating stack
assert log.contains('ncclguard: aCommunicatorIsMadeAndReleasedUnlessTheBuildAsksForALeak() left 1 communicator behind') :
        'the leaky test did not fail with the extension\'s report'
assert log =~ /at consumer\.CommunicatorTest\.aCommunicatorIsMadeAndReleasedUnlessTheBuildAsksForALeak\(CommunicatorTest\.java:\d+\)/
assert !log.contains('Unable to load library') : 'JNA did not find the emulator'
// 2: the clean build passed
assert log =~ /Tests run: 2, Failures: 0, Errors: 0, Skipped: 0/ : 'the clean build did not run its two tests green'
return true
