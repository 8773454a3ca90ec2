// Types for the parts of qrcode-generator 2.0.4 (ESM build, dist/qrcode.mjs) the app uses.
// Written for this project; the package's own qrcode.d.ts describes its CommonJS build.
export interface QRCode {
  addData(data: string, mode?: 'Numeric' | 'Alphanumeric' | 'Byte' | 'Kanji'): void;
  make(): void;
  getModuleCount(): number;
  isDark(row: number, col: number): boolean;
  createDataURL(cellSize?: number, margin?: number): string;
}
export declare function qrcode(typeNumber: number, errorCorrectionLevel: 'L' | 'M' | 'Q' | 'H'): QRCode;
export default qrcode;
