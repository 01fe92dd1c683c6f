// Two methods that share the main thread, each timed by the thread's CPU clock: prints
// "ready" once under way, then, every round, writes "HOTA_SECONDS HOTB_SECONDS" to the file
// given (args: SECONDS FILE).
package holdout;

import java.io.FileWriter;
import java.lang.management.ManagementFactory;
import java.lang.management.ThreadMXBean;

public class Split {
	static volatile long sink;

	static long hotA(long n) {
		long x = 1;
		for (long i = 0; i < n; i++)
			x = x * 31 + (i ^ (x >>> 7));
		return x;
	}

	static long hotB(long n) {
		long x = 3;
		for (long i = 0; i < n; i++)
			x += (x << 3) ^ (i * 0x9e3779b97f4a7c15L);
		return x;
	}

	public static void main(String[] args) throws Exception {
		final long seconds = Long.parseLong(args[0]);
		final ThreadMXBean clock = ManagementFactory.getThreadMXBean();
		final long end = System.nanoTime() + seconds * 1_000_000_000L;
		long a = 0, b = 0;
		System.out.println("ready");
		System.out.flush();
		while (System.nanoTime() < end) {
			final long t0 = clock.getCurrentThreadCpuTime();
			sink += hotA(3_000_000);
			final long t1 = clock.getCurrentThreadCpuTime();
			sink += hotB(1_500_000);
			final long t2 = clock.getCurrentThreadCpuTime();
			a += t1 - t0;
			b += t2 - t1;
			try (FileWriter truth = new FileWriter(args[1])) {
				truth.write((a / 1e9) + " " + (b / 1e9) + "\n");
			}
		}
	}
}
