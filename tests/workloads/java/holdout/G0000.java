// The template of the classes Churn.java makes: its bytes are loaded again and again, each
// time under a name of its own (holdout.G0001, G0002, ...: "G0000" replaced throughout, in
// the class's name and its source file's).
package holdout;

import java.util.function.LongUnaryOperator;

public final class G0000 implements LongUnaryOperator {
	public long applyAsLong(long n) {
		long x = 7;
		for (long i = 0; i < n; i++)
			x = x * 31 + (i ^ (x >>> 5));
		return x;
	}
}
