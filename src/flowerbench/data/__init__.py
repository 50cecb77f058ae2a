"""The data: fetch (download, local archive or the generated stand-in), the stand-in itself, and the
tf.data input pipeline the training reads."""
