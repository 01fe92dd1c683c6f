// Churns compiled code for SECONDS (args: SECONDS): every round defines a fresh class, its
// own class loader's (G0000.java's bytes named holdout.GNNNN, N the round's number), runs its
// method hot enough to be compiled, and drops it; every 20 rounds a full GC unloads the
// classes dropped, their compiled code is freed, and new code takes its place in the code
// cache. Prints "ready" once it churns, and at its end "unloaded N" (the classes the JVM
// unloaded).
package holdout;

import java.io.InputStream;
import java.lang.management.ManagementFactory;
import java.nio.charset.StandardCharsets;
import java.util.function.LongUnaryOperator;

public class Churn {
	static volatile long sink;

	static final class Loader extends ClassLoader {
		Loader() {
			super(Churn.class.getClassLoader());
		}

		Class<?> define(String name, byte[] bytes) {
			return defineClass(name, bytes, 0, bytes.length);
		}
	}

	// The template's bytes with every "G0000" (in its constant pool: the class's name and
	// its source file's) made "GNNNN": same length, so the class file stays whole.
	static byte[] renamed(byte[] template, String to) {
		final byte[] from = "G0000".getBytes(StandardCharsets.US_ASCII), with = to.getBytes(StandardCharsets.US_ASCII);
		final byte[] out = template.clone();
		for (int i = 0; i + from.length <= out.length; i++) {
			int k = 0;
			while (k < from.length && out[i + k] == from[k])
				k++;
			if (k == from.length)
				System.arraycopy(with, 0, out, i, with.length);
		}
		return out;
	}

	// An even generation's method is called from even, an odd one's from odd: a frame named
	// as the generation before or after it (its code's place taken by theirs) would stand
	// under the wrong one.
	static long even(LongUnaryOperator op) {
		long x = 0;
		for (int i = 0; i < 200; i++)
			x += op.applyAsLong(5_000);
		return x;
	}

	static long odd(LongUnaryOperator op) {
		long x = 0;
		for (int i = 0; i < 200; i++)
			x += op.applyAsLong(5_000);
		return x;
	}

	public static void main(String[] args) throws Exception {
		final long end = System.nanoTime() + Long.parseLong(args[0]) * 1_000_000_000L;
		final byte[] template;
		try (InputStream in = Churn.class.getResourceAsStream("G0000.class")) {
			template = in.readAllBytes();
		}
		System.out.println("ready");
		System.out.flush();
		for (int n = 1; System.nanoTime() < end; n++) {
			final String name = String.format("G%04d", n % 10000);
			final Class<?> generated = new Loader().define("holdout." + name, renamed(template, name));
			final LongUnaryOperator op = (LongUnaryOperator) generated.getDeclaredConstructor().newInstance();
			sink += n % 2 == 0 ? even(op) : odd(op);
			if (n % 20 == 0)
				System.gc();
		}
		System.out.println("unloaded " + ManagementFactory.getClassLoadingMXBean().getUnloadedClassCount());
	}
}
