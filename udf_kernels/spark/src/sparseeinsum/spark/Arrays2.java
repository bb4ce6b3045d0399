package sparseeinsum.spark;

import org.apache.spark.sql.catalyst.util.ArrayData;
import org.apache.spark.sql.catalyst.expressions.UnsafeArrayData;
import org.apache.spark.unsafe.Platform;

/** DOUBLE arrays between Spark's ArrayData and double[]. */
final class Arrays2 {
    private Arrays2() {
    }

    /** The values of a non-NULL array, to read only (a DoubleArray's own); an error naming
     *  `what` when an element is NULL. */
    static double[] doubles(ArrayData a, String fn, String what) {
        if (a instanceof DoubleArray) {
            return ((DoubleArray) a).values;
        }
        if (a instanceof UnsafeArrayData) {
            UnsafeArrayData u = (UnsafeArrayData) a;
            int n = u.numElements();
            long words = (n + 63) / 64;
            for (long w = 0; w < words; w++) {      // the null bits follow the 8-byte count
                if (Platform.getLong(u.getBaseObject(), u.getBaseOffset() + 8 + 8 * w) != 0) {
                    throw nullElements(fn, what);
                }
            }
            return u.toDoubleArray();
        }
        int n = a.numElements();
        double[] out = new double[n];
        for (int i = 0; i < n; i++) {
            if (a.isNullAt(i)) {
                throw nullElements(fn, what);
            }
            out[i] = a.getDouble(i);
        }
        return out;
    }

    private static IllegalArgumentException nullElements(String fn, String what) {
        return new IllegalArgumentException(fn + ": " + what + " contains NULL elements");
    }

    /** A kernel's result, taken as it is: nothing writes `values` afterwards. */
    static ArrayData array(double[] values) {
        return new DoubleArray(values);
    }
}
