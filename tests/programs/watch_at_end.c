/* The watched variable's last write right before where the client stops
 * live (test_signal_replay.py): replayed forward, that write is the
 * history's last instruction. */
volatile int watched;

__attribute__((noipa)) void mark(void) {}

int main(void) {
  watched = 1;
  watched = 2;
  watched = 3;
  mark(); /* MARK: after_writes */
  watched = 4;
  return watched;
}
