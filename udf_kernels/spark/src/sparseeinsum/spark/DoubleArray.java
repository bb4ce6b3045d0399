package sparseeinsum.spark;

import java.util.Arrays;
import org.apache.spark.sql.catalyst.util.ArrayData;
import org.apache.spark.sql.catalyst.util.GenericArrayData;
import org.apache.spark.sql.types.DataType;

/** A read-only DOUBLE array over a double[] that the kernels take as it is, without a
 *  copy (`Arrays2.doubles`): what every kernel returns, and a broadcast relation's values
 *  (`BroadcastArray`). Spark writes it into a row element by element. */
final class DoubleArray extends GenericArrayData {
    final double[] values;

    DoubleArray(double[] values) {
        super(new Object[0]);
        this.values = values;
    }

    @Override
    public int numElements() {
        return values.length;
    }

    @Override
    public boolean isNullAt(int i) {
        return false;
    }

    @Override
    public double getDouble(int i) {
        return values[i];
    }

    @Override
    public Object get(int i, DataType type) {
        return values[i];
    }

    @Override
    public double[] toDoubleArray() {
        return values.clone();
    }

    @Override
    public Object[] array() {
        Object[] boxed = new Object[values.length];
        for (int i = 0; i < values.length; i++) {
            boxed[i] = values[i];
        }
        return boxed;
    }

    @Override
    public ArrayData copy() {
        return this;
    }

    @Override
    public void setNullAt(int i) {
        throw new UnsupportedOperationException("a kernel's array is read-only");
    }

    @Override
    public void update(int i, Object value) {
        throw new UnsupportedOperationException("a kernel's array is read-only");
    }

    @Override
    public boolean equals(Object other) {
        return other instanceof DoubleArray && Arrays.equals(values, ((DoubleArray) other).values);
    }

    @Override
    public int hashCode() {
        return Arrays.hashCode(values);
    }
}
