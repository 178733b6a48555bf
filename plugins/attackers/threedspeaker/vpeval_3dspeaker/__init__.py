"""vpeval-3dspeaker: CAM++ and ERes2Net speaker encoders from local 3D-Speaker / WeSpeaker checkpoints or ONNX files."""
