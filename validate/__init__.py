"""memest's GPU-measurement side: the model zoo, ONNX export, and the ground truth."""
